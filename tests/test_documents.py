"""Document-level membership inference (mia_core.documents, Meeus et al. 2024).

A controlled setting with ground-truth membership: a tiny GPT-2 (2 layers, 64 dims, a
1,024-token byte-level BPE trained here on the test books) is trained for a few epochs on
member documents cut from 10 public-domain books (tests/data/books); documents from the
other 10 books are non-members. The model is saved with ``save_pretrained`` and loaded back
through ``load_causal_lm`` so the real loading path is exercised.
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from mia_core.stats import compute as stats_compute
from mia_core.stats import workload as stats_workload
from mia_core.cli import main as cli_main
from mia_core.documents import (
    AGG_NAMES,
    AGG_NAMES_COUNT,
    HistogramFeatures,
    agg_features,
    build_dictionaries,
    cross_validate,
    excerpts,
    load_documents,
    make_folds,
    normalized_values,
    run_baselines,
    parse_features,
    parse_normalizations,
    precision_table,
    random_forest,
    run_document_audit,
    scale_to_documents,
    token_counts,
)
from mia_core.errors import SettingsError
from mia_core.models import load_causal_lm
from mia_core.stats import StatsSettings, TokenStats, compute_stats, prefix_token_id, tokenize

from mia_core.stats import StatsSettings as _StatsSettings

ALWAYS = _StatsSettings(prefix="always")  # the prefix the by-hand computations here put in front

BOOKS = Path(__file__).parent / "data" / "books"
PIECE_CHARS = 3000  # two 3,000-character documents from the start of each 12,000-character excerpt
TREES = 100  # the paper's 500 trees are checked in test_random_forest_is_the_papers; 100 keep tests fast


def _pieces(text: str, n: int = 2, size: int = PIECE_CHARS) -> list[str]:
    out, pos = [], 0
    for _ in range(n):
        end = text.rfind(" ", pos, pos + size)
        end = pos + size if end <= pos else end
        out.append(text[pos:end].strip())
        pos = end
    return out


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """Own cache folder, one torch thread (two busy cores), offline hub."""
    mp = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("docs")
    mp.setenv("MIA_CACHE_DIR", str(root / "cache"))
    mp.setenv("HF_HUB_OFFLINE", "1")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield root
    torch.set_num_threads(threads)
    mp.undo()


@pytest.fixture(scope="module")
def corpus():
    files = sorted(BOOKS.glob("*.txt"))
    assert len(files) == 20
    texts = [f.read_text(encoding="utf-8") for f in files]
    members, nonmembers = [], []
    for i, (f, t) in enumerate(zip(files, texts)):
        for k, piece in enumerate(_pieces(t)):
            (members if i % 2 == 0 else nonmembers).append((f"{f.stem}_part{k + 1}", piece))
    return {"all_texts": texts, "members": members, "nonmembers": nonmembers}


@pytest.fixture(scope="module")
def tiny_lm(env, corpus):
    """Train the tiny target on the member documents only (about 10 s on one core)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        corpus["all_texts"],
        trainers.BpeTrainer(vocab_size=1024, special_tokens=["<|endoftext|>"],
                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False),
    )
    from tokenizers.processors import TemplateProcessing

    # trained below with <|endoftext|> in front of every document: the tokenizer puts it there itself, so the
    # default prefix ("auto") scores the documents as this model saw them
    bpe.post_processor = TemplateProcessing(single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", 0)])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                                  pad_token="<|endoftext|>")
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(tok), n_positions=256, n_embd=64, n_layer=2, n_head=4, bos_token_id=0,
                     eos_token_id=0, pad_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(cfg)
    ids = np.concatenate([np.r_[0, tok(t, add_special_tokens=False)["input_ids"]] for _, t in corpus["members"]])
    L, B, epochs, lr = 128, 8, 6, 5e-3
    n = len(ids) // L
    blocks = torch.tensor(ids[: n * L].reshape(n, L))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=epochs * ((n + B - 1) // B), pct_start=0.1)
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(n)
        for i in range(0, n, B):
            b = blocks[perm[i: i + B]]
            loss = model(input_ids=b, labels=b).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    model.eval()
    folder = env / "tiny_target"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return load_causal_lm(str(folder))


@pytest.fixture(scope="module")
def audit(tiny_lm, corpus):
    members = [t for _, t in corpus["members"]]
    nonmembers = [t for _, t in corpus["nonmembers"]]
    return run_document_audit(
        members, nonmembers, tiny_lm, reference=tiny_lm, context=128,
        normalizations=("maxnorm-gp", "maxnorm-tf"), features=("hist",), folds=5, n_bins=100, seed=0,
        partial_lengths=(100, 400), partial_pipelines=[("maxnorm_gp", "hist")], baselines=True,
        baseline_max_sequences=4, n_estimators=TREES,
    )


# --------------------------------------------------------------------------- the method end to end


@pytest.mark.slow
def test_maxnorm_hist_separates_trained_members(audit):
    m = audit.metrics["maxnorm_gp+hist"]
    assert m["auc_mean"] >= 0.8, audit.summary_text()
    assert len(m["folds"]) == 5
    for f in m["folds"]:
        assert f["n"] == 8  # 4 members + 4 non-members held out per fold
        assert f["roc"]["fpr"][0] == 0.0 and f["roc"]["fpr"][-1] == 1.0
        assert set(f["tpr_at_fpr"]) == {"0.01", "0.1"}
    # every document is held out exactly once and gets an out-of-fold probability
    df = audit.scores
    assert len(df) == 40 and df["fold"].between(0, 4).all()
    assert sorted(df["fold"].value_counts().tolist()) == [8] * 5
    p = df["prob:maxnorm_gp+hist"].to_numpy()
    assert np.isfinite(p).all()
    assert p[df.label == 1].mean() > p[df.label == 0].mean() + 0.2
    assert "warnings" in audit.to_json() and any("TPR at 1%" in w for w in audit.warnings)


def test_baselines_scaled_to_documents(audit):
    b = audit.baselines
    assert set(b) == {"loss", "zlib", "lowercase", "ref", "min_k"}
    assert any("neighbourhood" in n for n in audit.baseline_notes)
    for a in b:
        assert set(b[a]) == {"sequence", "document_average", "document_threshold"}
    # the reference model is the target itself: the calibrated score is 0 everywhere -> no signal
    assert b["ref"]["document_average"]["auc_mean"] == pytest.approx(0.5)
    # the LOSS document average is the mean of -loss over the document's sampled sequences
    assert np.isfinite(audit.scores["baseline:loss:document_average"]).all()
    frac = audit.scores["baseline:min_k:document_threshold"].to_numpy()
    assert ((frac >= 0) & (frac <= 1)).all()


def test_neighbourhood_baseline_when_asked(audit, tiny_lm):
    assert any(n.startswith("neighbourhood: off by default") for n in audit.baseline_notes)
    folds = make_folds(audit.labels, 5, 0)
    gen = f"offline:{tiny_lm.info['location']}"  # the tiny target proposes the substitute words: cheap
    br = run_baselines(tiny_lm, audit._stats, audit.labels, folds, attacks=("loss", "neighbourhood"), max_per_doc=1,
                       neighbours={"n": 3, "generator": gen})
    assert br.notes == [] and br.n_sequences == 40
    m = br.metrics["neighbourhood"]["document_average"]
    assert np.isfinite(br.doc_scores["neighbourhood"]["document_average"]).sum() >= 30
    assert 0 <= m["auc_mean"] <= 1


def test_feature_options_reach_the_forest_and_the_settings(audit, tiny_lm, corpus):
    # the options are recorded in every run, defaults included
    assert audit.settings["agg_count"] is False and audit.to_json()["settings"]["hist_outside"] == "clip"  # always recorded
    cv = cross_validate(audit._stats, audit.labels, ["nonorm"], ["agg", "hist"], vocab_size=tiny_lm.vocab_size,
                        folds=2, n_bins=10, n_estimators=10, keep_fitted=True, agg_count=True, hist_outside="drop")
    for fold in cv.fitted:
        assert fold["nonorm+agg"]["classifier"].n_features_in_ == len(AGG_NAMES_COUNT)
        assert fold["nonorm+hist"]["hist"].outside == "drop"
    res = run_document_audit(
        [t for _, t in corpus["members"]], [t for _, t in corpus["nonmembers"]], tiny_lm, normalizations="nonorm",
        features="both", n_bins=20, partial_lengths=(100,), partial_pipelines=[("nonorm", "hist")], baselines=False,
        n_estimators=10, agg_count=True, hist_outside="drop",
    )
    assert res.to_json()["settings"]["agg_count"] is True and res.settings["hist_outside"] == "drop"
    assert "AggFE with the token count" in res.summary_text() and "dropped, densities" in res.summary_text()
    assert np.isfinite(res.scores["prob:nonorm+hist"]).all() and len(res.partial) == 1
    only = run_document_audit([t for _, t in corpus["members"]], [t for _, t in corpus["nonmembers"]], tiny_lm,
                              normalizations="nonorm", features="hist", n_bins=20, partial_lengths=None,
                              baselines=False, n_estimators=10, hist_outside="drop")
    assert (only.settings["agg_count"], only.settings["hist_outside"]) == (False, "drop")  # both, when one is set


def test_partial_documents_curve_uses_excerpts(audit):
    part = audit.partial
    assert part["n_tokens"].tolist() == [100, 400]
    assert (part["position"] == "start").all()  # the first L tokens; re-fitted at each L (test_partial_documents.py)
    assert (part["mean_tokens"] == part["n_tokens"]).all()  # every document is longer than 400 tokens
    assert (part["n_truncated"] == 40).all()
    assert part["auc_mean"].between(0, 1).all()
    # seeing 100 tokens of each document says less than seeing all of it (§6.4)
    assert part.loc[part.n_tokens == 100, "auc_mean"].item() < audit.metrics["maxnorm_gp+hist"]["auc_mean"] - 0.1
    ex = excerpts(audit._stats, 100, seed=1)
    for full, e in zip(audit._stats, ex):
        assert e.n_tokens == 100
        # a contiguous slice of the full-document statistics: no new model call
        ids = full.token_ids
        starts = [i for i in range(len(ids) - 99) if np.array_equal(ids[i: i + 100], e.token_ids)]
        assert any(np.array_equal(full.logprob[s: s + 100], e.logprob) for s in starts)


def test_token_values_use_the_held_out_fold_dictionary(audit, tiny_lm):
    i = 3
    k = int(audit.scores.loc[i, "fold"])
    tr, te = make_folds(audit.labels, 5, 0)[k]
    assert i in te and i not in tr
    d = build_dictionaries(audit._stats, tr, tiny_lm.vocab_size)
    want = normalized_values(audit._stats[i], "maxnorm_tf", d)
    np.testing.assert_allclose(audit.token_values(i, "MaxNormTF"), want)
    s = audit._stats[i]
    p, pmax = np.exp(s.logprob.astype(float)), np.exp(s.max_logprob.astype(float))
    manual = -np.log((1 - (pmax - p)) / d.token_freq[s.token_ids])
    np.testing.assert_allclose(want, manual, rtol=1e-9)
    assert len(audit.token_strings(i)) == s.n_tokens


# --------------------------------------------------------------------------- no leakage, R^GP


def test_fold_dictionaries_never_see_held_out_tokens(audit, tiny_lm):
    stats, V = audit._stats, tiny_lm.vocab_size
    for tr, te in make_folds(audit.labels, 5, 0):
        d = build_dictionaries(stats, tr, V)
        assert d.doc_indices == tuple(int(i) for i in tr)
        train_counts = sum(token_counts(stats[i], V) for i in tr)
        held_counts = sum(token_counts(stats[i], V) for i in te)
        assert d.n_tokens == train_counts.sum()
        floor = (train_counts[train_counts > 0] / train_counts.sum()).min() / 2
        only_held = (held_counts > 0) & (train_counts == 0)
        assert only_held.any()  # the held-out books do have tokens of their own
        np.testing.assert_allclose(d.token_freq[only_held], floor)
        np.testing.assert_allclose(d.token_freq[train_counts > 0], train_counts[train_counts > 0] / train_counts.sum())
        gp = sum(stats[i].vocab_prob_sum for i in tr) / sum(stats[i].n_predicted for i in tr)
        np.testing.assert_allclose(d.general_proba, np.maximum(gp, gp[gp > 0].min() / 2))
        assert d.n_positions == sum(stats[i].n_predicted for i in tr)
    # adding one held-out document would change both dictionaries
    tr, te = make_folds(audit.labels, 5, 0)[0]
    d0 = build_dictionaries(stats, tr, V)
    d1 = build_dictionaries(stats, list(tr) + [int(te[0])], V)
    assert not np.allclose(d0.token_freq, d1.token_freq) and not np.allclose(d0.general_proba, d1.general_proba)


def _direct_general_proba(lm, texts, context):
    """Full softmax at every predicted position (windows of C, stride C-1), averaged."""
    prefix = prefix_token_id(lm.tokenizer)
    total, n = np.zeros(lm.vocab_size), 0
    for t in texts:
        seq = np.r_[prefix, tokenize(lm, t)].astype(np.int64)
        s = 0
        while True:
            w = seq[s: s + context]
            with torch.no_grad():
                probs = torch.softmax(lm.model(input_ids=torch.from_numpy(w)[None]).logits[0, :-1].double(), -1)
            total += probs.sum(0).numpy()
            n += len(w) - 1
            if s + context >= len(seq):
                break
            s += context - 1
    return total / n


def test_general_probability_incremental_equals_direct(tiny_lm, corpus):
    texts = [t[:400] for _, t in corpus["members"][:3]] + [corpus["nonmembers"][0][1][:1200]]
    st = compute_stats(tiny_lm, texts, StatsSettings(prefix="always", context=32, vocab_probs=True), use_cache=False)
    d = build_dictionaries(st, range(len(texts)), tiny_lm.vocab_size)
    np.testing.assert_allclose(d.general_proba, _direct_general_proba(tiny_lm, texts, 32), rtol=1e-4, atol=1e-9)
    assert d.n_positions == sum(len(tokenize(tiny_lm, t)) for t in texts)


# --------------------------------------------------------------------------- building blocks


def _toy_stats(logprob, max_logprob, ids, vp=None) -> TokenStats:
    n = len(ids)
    z = np.zeros(n, dtype=np.float32)
    return TokenStats(token_ids=np.asarray(ids, dtype=np.int32), logprob=np.asarray(logprob, dtype=np.float32),
                      max_logprob=np.asarray(max_logprob, dtype=np.float32), mu=z, sigma=z, entropy=z,
                      rank=np.ones(n, dtype=np.int32), top_id=np.zeros(n, dtype=np.int32), n_bytes=n,
                      vocab_prob_sum=vp)


def test_normalisation_formulas():
    a = _toy_stats(np.log([0.5, 0.1, 0.2]), np.log([0.5, 0.6, 0.2]), [0, 1, 1], vp=np.array([1.0, 1.5, 0.5, 0.0]))
    b = _toy_stats(np.log([0.3]), np.log([0.3]), [2], vp=np.array([0.2, 0.2, 0.6, 0.0]))
    d = build_dictionaries([a, b], [0], vocab_size=4)
    np.testing.assert_allclose(d.token_freq, [1 / 3, 2 / 3, 1 / 6, 1 / 6])  # unseen: half the smallest
    np.testing.assert_allclose(d.general_proba, [1 / 3, 0.5, 1 / 6, 1 / 12])  # zero -> half the smallest
    np.testing.assert_allclose(normalized_values(a, "nonorm", d), -np.log([0.5, 0.1, 0.2]), rtol=1e-6)
    np.testing.assert_allclose(normalized_values(a, "rationorm_tf", d), -np.log([0.5 * 3, 0.1 * 1.5, 0.2 * 1.5]), rtol=1e-6)
    np.testing.assert_allclose(normalized_values(a, "rationorm_gp", d), -np.log([0.5 * 3, 0.1 / 0.5, 0.2 / 0.5]), rtol=1e-6)
    # MaxNorm: -log((1 - (P_max - P)) / R); the top token (P = P_max) gives -log(1 / R)
    np.testing.assert_allclose(normalized_values(a, "maxnorm_tf", d), -np.log([3.0, 0.5 * 1.5, 1.5]), rtol=1e-6)
    np.testing.assert_allclose(normalized_values(b, "maxnorm_gp", d), [np.log(1 / 6)], rtol=1e-6)
    assert parse_normalizations("all") == ("nonorm", "rationorm_tf", "rationorm_gp", "maxnorm_tf", "maxnorm_gp")
    assert parse_normalizations("MaxNormTF, rationorm-gp") == ("maxnorm_tf", "rationorm_gp")
    assert parse_features("both") == ("hist", "agg")
    with pytest.raises(SettingsError):
        parse_normalizations("maxnorm")
    with pytest.raises(SettingsError):
        parse_features("mean")


def test_feature_extractors():
    train = [np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 1.0, np.nan])]
    fe = HistogramFeatures(n_bins=3).fit(train)
    np.testing.assert_allclose(fe.edges, [0, 1, 2, 3])  # fitted on the training values only
    X = fe.transform([np.array([-5.0, 0.5, 2.5, 10.0]), np.array([1.5, 1.5])])
    np.testing.assert_allclose(X, [[0.5, 0, 0.5], [0, 1, 0]])  # out-of-range values go to the edge bins
    A = agg_features([np.array([1.0, 2.0, 3.0, np.nan, np.inf])])
    assert A.shape == (1, len(AGG_NAMES)) and AGG_NAMES[:4] == ("min", "max", "mean", "std")
    np.testing.assert_allclose(A[0, :4], [1, 3, 2, np.std([1, 2, 3])])
    assert A[0, AGG_NAMES.index("p50")] == 2.0


def test_agg_count_is_the_authors_count_and_off_by_default():
    """The authors' AggFE also feeds len(nlls); here only with count=True, as a 14th column."""
    docs = [np.array([1.0, 2.0, 3.0, np.nan, np.inf]), np.array([5.0, 5.0]), np.array([np.nan])]
    A = agg_features(docs)
    assert A.shape == (3, 13) and "count" not in AGG_NAMES
    C = agg_features(docs, count=True)
    assert C.shape == (3, 14) and AGG_NAMES_COUNT == AGG_NAMES + ("count",)
    np.testing.assert_array_equal(C[:, -1], [3, 2, 0])  # the values that enter the features (finite ones)
    np.testing.assert_allclose(C[:, :-1], A)  # the 13 others unchanged (NaN for a document without values)


def test_hist_drop_is_numpys_density_histogram_of_the_values_in_range():
    """outside="drop" is the authors' numpy.histogram(values, edges, density=True): values outside the
    fitted range are left out and each feature is a density (share of the in-range values / bin width)."""
    train = [np.array([0.0, 1.0]), np.array([4.0, np.nan])]
    held = [np.array([-1.0, 1.0, 1.0, 3.0, 9.0]), np.array([4.0, 0.0, 2.0]), np.array([-3.0, 7.0])]
    clip = HistogramFeatures(2).fit(train)
    drop = HistogramFeatures(2, outside="drop").fit(train)
    np.testing.assert_allclose(drop.edges, [0, 2, 4])  # the same bins, fitted on the training values
    np.testing.assert_allclose(clip.edges, drop.edges)
    # clip: -1 -> first bin, 9 -> last bin; fractions of all values
    np.testing.assert_allclose(clip.transform(held), [[3 / 5, 2 / 5], [1 / 3, 2 / 3], [1 / 2, 1 / 2]])
    X = drop.transform(held)
    # drop: -1 and 9 left out; {1, 1, 3}: counts (2, 1) / (3 values x width 2). 4.0 on the last edge counts, 2.0
    # goes to the right bin (numpy's rule); a document with no value in range is NaN (numpy's 0/0)
    np.testing.assert_allclose(X[:2], [[2 / 6, 1 / 6], [1 / 6, 2 / 6]])
    assert np.isnan(X[2]).all()
    with np.errstate(invalid="ignore"):
        for r, v in enumerate(held):
            np.testing.assert_allclose(X[r], np.histogram(v, bins=drop.edges, density=True)[0])
    # a training document is never outside its bins: density x width sums to 1
    np.testing.assert_allclose(drop.transform(train).sum(1) * 2, [1, 1])
    # all training values equal: numpy's own range (value +- 0.5) for "drop"; clip keeps (value, value + 1)
    same = [np.array([2.0, 2.0])]
    np.testing.assert_allclose(HistogramFeatures(2, "drop").fit(same).edges, np.histogram(same[0], bins=2)[1])
    np.testing.assert_allclose(HistogramFeatures(2).fit(same).edges, [2, 2.5, 3])


def test_feature_options_refused_in_one_line_before_any_model(capsys):
    with pytest.raises(SettingsError, match="choose clip or drop"):
        HistogramFeatures(3, "cut")
    docs_m, docs_n = ["one two three"] * 2, ["four five six"] * 2
    for kw, what in (({"hist_outside": "cut"}, "hist_outside must be one of clip, drop, got 'cut'"),
                     ({"agg_count": "yes"}, "agg_count must be true or false")):
        with pytest.raises(SettingsError, match=what) as e:
            run_document_audit(docs_m, docs_n, None, **kw)  # no model: refused before it is used
        assert "\n" not in str(e.value)
    with pytest.raises(SettingsError, match="choose clip or drop"):
        cross_validate([], [], ["nonorm"], ["hist"], vocab_size=4, folds=[], hist_outside="density")
    assert cli_main(["documents", "--demo", "--hist-outside", "cut"]) == 2  # argparse: before anything loads
    err = capsys.readouterr().err
    assert "--hist-outside" in err and "invalid choice" in err and len(err.strip().splitlines()) == 1


def test_random_forest_is_the_papers():
    rf = random_forest(7)
    assert (rf.n_estimators, rf.max_depth, rf.min_samples_leaf, rf.random_state) == (500, 5, 3, 7)
    folds = make_folds([1] * 6 + [0] * 6, 3, 0)
    for tr, te in folds:  # stratified: balanced held-out folds
        assert sorted(np.r_[0:12][te] < 6) == [False, False, True, True]
    with pytest.raises(SettingsError, match="folds need at least"):
        make_folds([1] * 3 + [0] * 10, 5, 0)


def test_document_threshold_is_fitted_on_training_folds():
    # docs 0,1 members; 2,3 non-members; 3 sequences each
    seq_doc = np.repeat(np.arange(4), 3)
    s = np.array([5, 6, 7, 4, 6, 8, 1, 2, 3, 2, 9, 1], dtype=float)
    folds = [(np.array([0, 2]), np.array([1, 3])), (np.array([1, 3]), np.array([0, 2]))]
    m, docs = scale_to_documents({"x": s}, seq_doc, [1, 1, 0, 0], folds)
    np.testing.assert_allclose(docs["x"]["document_average"], [6, 6, 2, 4])
    # fold 0 trains on docs 0 and 2: threshold 5 separates them -> doc1: 2/3 >= 5, doc3: 1/3
    # fold 1 trains on docs 1 and 3: Youden's best threshold is 4 -> doc0: 3/3, doc2: 0/3
    np.testing.assert_allclose(docs["x"]["document_threshold"], [1, 2 / 3, 0, 1 / 3])
    assert m["x"]["document_threshold"]["auc_mean"] == 1.0


# --------------------------------------------------------------------------- inputs, CLI, cache


def _write_inputs(root: Path, corpus) -> tuple[Path, Path]:
    mdir = root / "members"
    mdir.mkdir(exist_ok=True)
    for i, (name, text) in enumerate(corpus["members"]):
        (mdir / f"m{i:02d}_{name}.txt").write_text(text, encoding="utf-8")
    zpath = root / "nonmembers.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        for i, (name, text) in enumerate(corpus["nonmembers"]):
            z.writestr(f"books/n{i:02d}_{name}.txt", text)
    return mdir, zpath


def test_folder_and_zip_feed_the_audit(env, corpus, tiny_lm, audit):
    mdir, zpath = _write_inputs(env, corpus)
    members, nonmembers = load_documents(mdir), load_documents(zpath)
    assert [d.text for d in members] == [t for _, t in corpus["members"]]
    assert [d.text for d in nonmembers] == [t for _, t in corpus["nonmembers"]]
    res = run_document_audit(members, nonmembers, tiny_lm, normalizations="maxnorm-gp", features="hist",
                             n_bins=100, partial_lengths=None, baselines=False, n_estimators=TREES)
    assert res.names[0] == "m00_" + corpus["members"][0][0]
    # same texts, folds and seed: the same out-of-fold probabilities as the in-memory run
    np.testing.assert_allclose(res.scores["prob:maxnorm_gp+hist"], audit.scores["prob:maxnorm_gp+hist"])


@pytest.mark.slow
def test_cli_writes_metrics_scores_and_token_values(env, corpus, tiny_lm, capsys):
    mdir, zpath = _write_inputs(env, corpus)
    out = env / "cli_out"
    model_dir = tiny_lm.info["location"]
    rc = cli_main(["documents", "--members", str(mdir), "--nonmembers", str(zpath), "--model", model_dir,
                   "--normalization", "maxnorm-gp,nonorm", "--features", "hist", "--bins", "100",
                   "--trees", str(TREES), "--partial-lengths", "none", "--no-baselines", "--out", str(out)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "MaxNormGP" in printed and "AUC mean" in printed
    metrics = json.loads((out / "document_metrics.json").read_text())  # strict JSON (no NaN)
    assert set(metrics["pipelines"]) == {"maxnorm_gp+hist", "nonorm+hist"}
    assert len(metrics["documents"]) == 40
    import pandas as pd

    scores = pd.read_csv(out / "document_scores.csv")
    assert len(scores) == 40 and scores["label"].sum() == 20
    index = json.loads((out / "token_values" / "index.json").read_text())
    assert len(index) == 40
    first = scores["document"][0]
    with np.load(out / "token_values" / index[first], allow_pickle=False) as z:
        assert len(z["maxnorm_gp"]) == len(z["token_ids"]) == len(z["token_text"]) == scores["n_tokens"][0]
        assert np.isfinite(z["maxnorm_gp"]).all()
    # user errors: one line, exit code 2
    assert cli_main(["documents", "--members", str(env / "missing"), "--nonmembers", str(zpath),
                     "--model", model_dir]) == 2
    assert cli_main(["documents", "--members", str(mdir), "--nonmembers", str(zpath), "--model", model_dir,
                     "--folds", "50", "--no-baselines"]) == 2
    err = capsys.readouterr().err
    assert "error: file not found" in err and "50 folds need" in err and "Traceback" not in err


class _Crash(Exception):
    pass


class _FakeClock:
    """Every call is 30 s later, so compute_stats saves its partial results after every batch."""

    def __init__(self):
        self.t = 0.0

    def time(self):
        self.t += 30.0
        return self.t


def test_interrupted_long_text_resumes_from_partial_cache(env, corpus, tiny_lm, monkeypatch):
    text = corpus["nonmembers"][3][1] + " " + corpus["nonmembers"][4][1]
    st = StatsSettings(prefix="always", context=16, vocab_probs=True, batch_tokens=64)  # 4 windows per batch
    full = compute_stats(tiny_lm, [text], st, use_cache=False)[0]
    monkeypatch.setattr(stats_workload, "time", _FakeClock())  # where the partial entry is written
    computed = []
    real_forward = stats_compute._forward

    def counting_forward(lm, items):
        computed.append(len(items))
        return real_forward(lm, items)

    monkeypatch.setattr(stats_compute, "_forward", counting_forward)
    ticks = []

    def crash(msg, frac):
        if frac == 0:  # the stage announcing itself before its first window
            return
        ticks.append(frac)
        if len(ticks) == 60:
            raise _Crash("simulated crash")

    with pytest.raises(_Crash):
        compute_stats(tiny_lm, [text], st, progress=crash)
    n_windows = round(1 / ticks[0])
    before = sum(computed)
    assert 60 <= before < n_windows
    computed.clear()
    again = compute_stats(tiny_lm, [text], st)[0]
    resumed = sum(computed)
    assert resumed < n_windows and before + resumed >= n_windows  # only the windows after the last save
    assert resumed <= n_windows - 56
    for f in ("logprob", "max_logprob", "rank"):
        np.testing.assert_allclose(getattr(again, f), getattr(full, f), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(again.vocab_prob_sum, full.vocab_prob_sum, rtol=1e-6)
    computed.clear()
    compute_stats(tiny_lm, [text], st)
    assert computed == []  # finished: a plain cache hit


def test_precision_table_small(corpus, tiny_lm):
    members = [t[:1200] for _, t in corpus["members"][:4]]
    nonmembers = [t[:1200] for _, t in corpus["nonmembers"][:4]]
    tab = precision_table(tiny_lm.info["location"], members, nonmembers, precisions=(("fp32", "none"), ("bf16", "none")),
                          pipeline=("maxnorm_gp", "hist"), folds=2, n_bins=20, n_estimators=20)
    assert tab["precision"].tolist() == ["fp32", "bf16"]
    assert (tab["error"] == "").all(), tab["error"].tolist()
    assert tab["auc_mean"].between(0, 1).all()
    assert tab.loc[1, "memory_mb"] < tab.loc[0, "memory_mb"]  # half precision halves the weights
