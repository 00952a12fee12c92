"""Deferred weights (issue 41): a load that an earlier load of the same files recorded hands back the same model,
figure for figure, with the weights read when a pass first needs them; a cached run reads none; files changed
since the record, or between the load and the first pass, are never taken for the recorded ones."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers import save_tiny_llama
from mia_core.errors import ModelError
from mia_core.models import load_causal_lm
from mia_core.models.deferred import LOADS_NAMESPACE, DeferredLoadedModel, DeferredTokenizer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
TEXT = "Members are texts the model was trained on; the rest are not. 1234 naïve résumé ~zß!"


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A tiny local Llama folder (its embedding makes the weight file 6 MB: larger than the first and last MiB the
    folder's identity reads) and a cache folder of its own."""
    folder = Path(save_tiny_llama(tmp_path / "tiny"))  # reads the session cache's converted tokenizer
    root = tmp_path / "cache"
    root.mkdir()
    monkeypatch.setenv("MIA_CACHE_DIR", str(root))
    return folder, root


def _logits(lm) -> torch.Tensor:
    ids = lm.tokenizer(TEXT, return_tensors="pt").input_ids
    with torch.inference_mode():
        return lm.model(ids).logits


def _element_offset(f: Path, name: str, index: int) -> int:
    """The byte offset of element ``index`` of tensor ``name`` in safetensors file ``f``."""
    raw = f.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    t = json.loads(raw[8:8 + n])[name]
    return 8 + n + t["data_offsets"][0] + 4 * index  # float32


def _bump(f: Path, offset: int) -> None:
    """Add 1 to the float32 at ``offset`` of ``f``, in place (its size and other bytes unchanged)."""
    with open(f, "r+b") as fh:
        fh.seek(offset)
        v = np.frombuffer(fh.read(4), dtype=np.float32)[0]
        fh.seek(offset)
        fh.write(np.float32(v + 1.0).tobytes())


def test_a_second_load_defers_the_weights_and_gives_the_same_model(tiny):
    """The first load reads and records; the second reads the tokenizer only, and every figure it reports, its
    tokenizer and, once a pass asks, its logits equal the first's."""
    folder, root = tiny
    full = load_causal_lm(str(folder), reuse=False)
    assert not isinstance(full, DeferredLoadedModel) and full.weights_loaded
    assert any((root / LOADS_NAMESPACE).rglob("*.npz"))

    seen = []
    lm = load_causal_lm(str(folder), reuse=False, progress=lambda m, f: seen.append(m))
    assert isinstance(lm, DeferredLoadedModel) and not lm.weights_loaded
    assert any("weights are read when a pass needs them" in s for s in seen)
    for k in ("identity", "name", "dtype", "quantize", "device", "max_context", "n_params", "vocab_size",
              "memory_bytes", "source", "base_spec"):
        assert getattr(lm, k) == getattr(full, k), k
    a, deferred = full.tokenizer, lm.tokenizer
    # before transformers' tokenizer is read, the file's gives the same size, probe, prefix and ids
    from mia_core.models.loaded import compute_prefix_token_id, compute_tokenizer_prefix_id, recorded_fact
    from mia_core.stats import tokenize

    assert isinstance(deferred, DeferredTokenizer) and not deferred.loaded
    assert lm.same_tokenizer(full) and full.same_tokenizer(lm) and len(deferred) == len(a)
    assert recorded_fact(deferred, "tokenizer_prefix_id", None) == compute_tokenizer_prefix_id(a)
    assert recorded_fact(deferred, "prefix_token_id", None) == compute_prefix_token_id(a)
    assert np.array_equal(tokenize(lm, TEXT), tokenize(full, TEXT)) and not deferred.loaded
    b = deferred.read()
    assert deferred.loaded and lm.tokenizer is deferred
    assert type(a) is type(b) and len(a) == len(b) and a.get_vocab() == b.get_vocab()
    assert a.special_tokens_map == b.special_tokens_map and a.pad_token_id == b.pad_token_id
    assert a.init_kwargs == b.init_kwargs and a.model_max_length == b.model_max_length
    assert a.backend_tokenizer.to_str() == b.backend_tokenizer.to_str()
    assert a(TEXT).input_ids == b(TEXT).input_ids
    assert lm.same_tokenizer(full)
    assert "read when a pass first needs them" in lm.info["weights"] and not lm.weights_loaded

    assert torch.equal(_logits(lm), _logits(full))  # the first pass reads them, in full, verified
    assert lm.weights_loaded and "read back against its checkpoint" in lm.info["weights"]
    assert lm.info["weights_read"] == "when a pass first needed them"

    eager = load_causal_lm(str(folder), reuse=False, defer_weights=False)
    assert eager.weights_loaded and eager.identity == full.identity


def test_a_cached_run_in_a_new_process_reads_no_weight_and_scores_the_same(tiny, tmp_path):
    """``mia run`` twice on the same texts: the second, every statistic cached, imports neither torch nor
    transformers (no weight is read, the tokenizer's ids come from its file: issue 70) and writes the same scores; ``--no-cache`` reads the weights when its pass
    starts and still writes the same scores."""
    folder, root = tiny
    members, nonmembers = tmp_path / "m.txt", tmp_path / "n.txt"
    members.write_text("\n".join(f"A member text number {i} about rivers and hills." for i in range(6)))
    nonmembers.write_text("\n".join(f"Another text, {i}, about ships and the sea at night." for i in range(6)))
    code = ("import sys\nfrom mia_core.cli import main\nrc = main(sys.argv[1:])\n"
            "print('MODULES', sorted(m for m in ('transformers.modeling_utils', 'peft', 'torch', 'transformers')"
            " if m in sys.modules))\n"
            "sys.exit(rc)")

    def run(out: str, *extra: str) -> tuple[str, str]:
        p = subprocess.run([sys.executable, "-c", code, "run", "--model", str(folder), "--members", str(members),
                            "--nonmembers", str(nonmembers), "--attacks", "loss,zlib,min_k", "--out",
                            str(tmp_path / out), *extra], capture_output=True, text=True, cwd=ROOT,
                           env={**os.environ, "MIA_CACHE_DIR": str(root)}, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        return p.stdout.strip().splitlines()[-1], p.stderr

    first, _ = run("first")
    assert "transformers.modeling_utils" in first
    second, err = run("second")
    assert second == "MODULES []", second
    assert "weights are read when a pass needs them" in err and "all 12 texts cached" in err
    third, _ = run("third", "--no-cache")
    assert "transformers.modeling_utils" in third
    scores = [(tmp_path / d / "scores.csv").read_bytes() for d in ("first", "second", "third")]
    assert scores[0] == scores[1] == scores[2]


def test_the_tokenizer_facts_taken_from_the_record_are_checked_when_it_is_read(tiny):
    """The one tokenizer fact a deferred load takes from its record unchecked (the BOS/EOS token of
    ``prefix="always"``), forged to another valid id: reading transformers' tokenizer stops with a one-line
    ``ModelError`` and drops the record (the next load reads in full, as this model); forged facts the file's
    tokenizer can check (size, probe, the token it puts in front) refuse the record at once; a record saying
    transformers does not tokenize with the file alone reads transformers' tokenizer at the load."""
    folder, _ = tiny
    full = load_causal_lm(str(folder), reuse=False)
    _, rec, write = _record(folder)
    assert rec["backend_is_file"] is True  # the embedded SmolLM2 tokenizer: transformers uses its file as it is
    real = rec["prefix_ids"]
    write({**rec, "prefix_ids": [real[0], 1 if real[1] != 1 else 2]})
    lm = load_causal_lm(str(folder), reuse=False)
    assert isinstance(lm, DeferredLoadedModel) and not lm.tokenizer.loaded
    with pytest.raises(ModelError) as e:
        lm.tokenizer.get_vocab()
    assert "prefix tokens are not the recorded ones" in str(e.value) and "\n" not in str(e.value)
    again = load_causal_lm(str(folder), reuse=False)
    assert not isinstance(again, DeferredLoadedModel) and again.identity == full.identity  # and it records anew

    _, rec, write = _record(folder)
    assert rec["prefix_ids"] == real
    seen = []
    for forged in ({"probe_ids": rec["probe_ids"][::-1]}, {"tokenizer_len": rec["tokenizer_len"] + 1},
                   {"prefix_ids": [3, real[1]]}):
        write({**rec, **forged})
        lm = load_causal_lm(str(folder), reuse=False, progress=lambda m, f: seen.append(m))
        assert not isinstance(lm, DeferredLoadedModel), forged
        _, rec, write = _record(folder)
    write({**rec, "backend_is_file": False})
    lm = load_causal_lm(str(folder), reuse=False)
    assert isinstance(lm, DeferredLoadedModel) and lm.tokenizer.loaded
    _same_model(lm, full)


def test_the_weight_samples_are_cast_as_torch_casts_them():
    """The casts a deferred load makes without torch (the same dtype; bf16 and fp16 to fp32) give torch's bytes,
    subnormals, infinities and signed zeros included; an fp16 NaN and a narrowing cast go to torch."""
    from mia_core.models.deferred import _cast

    rng = np.random.default_rng(0)
    bits16 = np.concatenate([rng.integers(0, 2**16, 4000), [0, 0x8000, 0x0001, 0x03FF, 0x7C00, 0xFC00, 0x7F80,
                                                             0xFF80, 0x7E00]]).astype("<u2")
    for kind, torch_dtype in (("BF16", torch.bfloat16), ("F16", torch.float16)):
        raw = bits16.tobytes()
        want = torch.frombuffer(bytearray(raw), dtype=torch_dtype).float().numpy().tobytes()
        got = _cast(raw, kind, "float32")
        assert got == want, kind  # (an fp16 NaN among them: torch casts)
        finite = bits16[np.isfinite(np.frombuffer(raw, "<f2"))] if kind == "F16" else bits16
        assert _cast(finite.tobytes(), kind, "float32") == \
            torch.frombuffer(bytearray(finite.tobytes()), dtype=torch_dtype).float().numpy().tobytes()
    f32 = rng.standard_normal(1000).astype("<f4").tobytes()
    assert _cast(f32, "F32", "float32") == f32
    assert _cast(f32, "F32", "bfloat16") == torch.frombuffer(bytearray(f32), dtype=torch.float32).to(
        torch.bfloat16).view(torch.uint8).numpy().tobytes()


def test_files_changed_since_the_record_are_read_in_full(tiny):
    """One float changed in the middle of the embedding (outside the first and last MiB the folder's identity
    reads, at an element the weight fingerprint samples): the record no longer matches, the load reads the
    weights, and its identity and weights are the changed model's."""
    folder, _ = tiny
    full = load_causal_lm(str(folder), reuse=False)
    f = folder / "model.safetensors"
    count = full.model.get_input_embeddings().weight.numel()
    index = 32 * (count - 1) // 63
    before = float(full.model.get_input_embeddings().weight.detach().view(-1)[index])  # (the model may map the file)
    at = _element_offset(f, "model.embed_tokens.weight", index)
    assert (1 << 20) < at < f.stat().st_size - (1 << 20)
    _bump(f, at)
    again = load_causal_lm(str(folder), reuse=False)
    assert not isinstance(again, DeferredLoadedModel)
    assert again.identity != full.identity
    assert float(again.model.get_input_embeddings().weight.detach().view(-1)[index]) == np.float32(before + 1.0)
    third = load_causal_lm(str(folder), reuse=False)  # recorded anew: deferred, as the changed model
    assert isinstance(third, DeferredLoadedModel) and third.identity == again.identity


def test_files_changed_between_the_load_and_the_first_pass_stop_the_pass(tiny):
    """A deferred model whose files change before a pass reads them: one-line ``ModelError`` naming the change,
    never the new weights under the old identity."""
    folder, _ = tiny
    load_causal_lm(str(folder), reuse=False)
    lm = load_causal_lm(str(folder), reuse=False)
    assert isinstance(lm, DeferredLoadedModel)
    f = folder / "model.safetensors"
    _bump(f, _element_offset(f, "model.embed_tokens.weight", 0))  # in the first MiB: the folder's identity moves
    with pytest.raises(ModelError) as e:
        lm.model  # noqa: B018
    assert "changed while this run was using them" in str(e.value) and "\n" not in str(e.value)
    assert not lm.weights_loaded


def test_a_damaged_record_means_a_full_load(tiny):
    folder, root = tiny
    full = load_causal_lm(str(folder), reuse=False)
    (entry,) = (root / LOADS_NAMESPACE).rglob("*.npz")
    entry.write_bytes(b"not an npz file")
    again = load_causal_lm(str(folder), reuse=False)
    assert not isinstance(again, DeferredLoadedModel) and again.identity == full.identity


def test_no_deferral_for_a_model_running_its_own_code_or_when_asked_not_to(tiny):
    folder, root = tiny
    load_causal_lm(str(folder), reuse=False, trust_remote_code=True)
    assert not any((root / LOADS_NAMESPACE).rglob("*.npz")) if (root / LOADS_NAMESPACE).exists() else True
    load_causal_lm(str(folder), reuse=False)
    assert isinstance(load_causal_lm(str(folder), reuse=False), DeferredLoadedModel)
    assert not isinstance(load_causal_lm(str(folder), reuse=False, trust_remote_code=True), DeferredLoadedModel)
    assert load_causal_lm(str(folder), reuse=False, defer_weights=False).weights_loaded


def test_threads_asking_for_the_weights_at_once_read_them_once(tiny):
    folder, _ = tiny
    load_causal_lm(str(folder), reuse=False)
    lm = load_causal_lm(str(folder), reuse=False)
    calls = []
    inner = lm._full_load

    def counted():
        calls.append(1)
        return inner()

    lm._full_load = counted
    got = []
    threads = [threading.Thread(target=lambda: got.append(lm.model)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(got) == 4 and all(m is got[0] for m in got)


def test_cache_clear_lists_and_removes_the_load_records(tiny):
    from mia_core.api.cache import clear_cache, plan_clear

    folder, root = tiny
    load_causal_lm(str(folder), reuse=False)
    plan = plan_clear(root=root)
    assert any(LOADS_NAMESPACE in str(p) for p in plan.trees + plan.files + plan.folders)
    clear_cache(plan=plan)
    assert not any((root / LOADS_NAMESPACE).rglob("*.npz")) if (root / LOADS_NAMESPACE).exists() else True
    assert not isinstance(load_causal_lm(str(folder), reuse=False), DeferredLoadedModel)


def test_a_record_pointing_at_files_outside_the_source_is_not_used(tiny, tmp_path):
    """A record whose weight files are not the source's (an edited or shared cache), even byte-identical copies
    of them: the load reads the weights."""
    import shutil

    from mia_core.models import causal
    from mia_core.models.deferred import _RECORD_ARRAY, _RECORD_KEY, _store

    folder, _ = tiny
    load_causal_lm(str(folder), reuse=False)
    settings = causal._record_settings(causal.resolve_spec(str(folder)), "fp32", "none", "cpu", False)
    store = _store(settings)
    rec = json.loads(str(store.get(_RECORD_KEY)[_RECORD_ARRAY][()]))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(folder / "model.safetensors", elsewhere / "model.safetensors")
    assert isinstance(load_causal_lm(str(folder), reuse=False), DeferredLoadedModel)  # the record as written
    rec["files"] = [str(elsewhere / "model.safetensors")]
    store.put(_RECORD_KEY, {_RECORD_ARRAY: np.array(json.dumps(rec))})
    assert not isinstance(load_causal_lm(str(folder), reuse=False), DeferredLoadedModel)


def test_the_sidebar_says_when_the_weights_are_not_read_yet(tiny):
    """The page's model line does not claim a load time for weights not read yet; once read, it does."""
    from dashboard.sidebar import _status_line

    folder, _ = tiny
    load_causal_lm(str(folder), reuse=False)
    lm = load_causal_lm(str(folder), reuse=False)
    assert "weights read when a pass needs them" in _status_line(lm) and "loaded in" not in _status_line(lm)
    lm.model  # noqa: B018
    assert "loaded in" in _status_line(lm)


# --------------------------------------------------------------------------- forged and damaged records (issue 50)

def _record(folder: Path):
    """The load record of ``folder`` (fp32 on the CPU): its settings, the record as written, and a writer."""
    from mia_core.models import causal
    from mia_core.models.deferred import _RECORD_ARRAY, _RECORD_KEY, _store

    settings = causal._record_settings(causal.resolve_spec(str(folder)), "fp32", "none", "cpu", False)
    store = _store(settings)
    rec = json.loads(str(store.get(_RECORD_KEY)[_RECORD_ARRAY][()]))

    def write(r: dict) -> None:
        store.put(_RECORD_KEY, {_RECORD_ARRAY: np.array(json.dumps(r))})

    return settings, rec, write


def _same_model(lm, full) -> None:
    """``lm`` is ``full``'s model as far as any score can tell, whether its weights were read or deferred."""
    for k in ("identity", "name", "dtype", "quantize", "device", "max_context", "vocab_size", "base_spec", "source"):
        assert getattr(lm, k) == getattr(full, k), k
    assert lm.same_tokenizer(full) and lm.tokenizer(TEXT).input_ids == full.tokenizer(TEXT).input_ids
    assert {k: lm.info.get(k) for k in ("trained_prefix_token_id", "base", "method")} == \
        {k: full.info.get(k) for k in ("trained_prefix_token_id", "base", "method")}


HOSTILE = (None, "x", float("nan"), 1e300, -1, 0, [], {}, [None], [1], "cuda:0")


def test_no_value_in_any_field_of_a_record_changes_a_figure_a_score_depends_on(tiny):
    """Every field of the record (and the fields older records held: identity, device, context length, tokenizer
    folder), set to each hostile value or removed: the record is refused with a reason, or it still gives this
    model's weight fingerprint, context length, vocabulary size and tokenizer. Never an exception."""
    from mia_core.models import causal
    from mia_core.models.deferred import Recorded, find_record

    folder, _ = tiny
    full = load_causal_lm(str(folder), reuse=False)
    settings, rec, write = _record(folder)
    source = causal._source(causal.resolve_spec(str(folder)), "cpu")
    fingerprint = full.identity.rsplit("|w:", 1)[-1]
    refused = used = 0
    for key in [*rec, "identity", "device", "max_context", "tok_src", "vocab_size"]:
        variants = [{**rec, key: v} for v in HOSTILE] + [{k: v for k, v in rec.items() if k != key}]
        for forged in variants:
            write(forged)
            got = find_record(settings, source)
            if isinstance(got, Recorded):
                used += 1
                assert (got.fingerprint, got.max_context, got.vocab_size) == (fingerprint, full.max_context,
                                                                              full.vocab_size), (key, forged[key])
                assert probe_ids_of(got.tokenizer) == probe_ids_of(full.tokenizer)
            else:
                refused += 1
                assert isinstance(got, str) and got and "\n" not in got, (key, got)
    assert refused > 100 and used > 0  # the display-only fields (a loss of 0, say) may pass their range checks


def probe_ids_of(tok) -> list[int]:
    from mia_core.models.loaded import probe_ids

    return probe_ids(tok)


@pytest.mark.parametrize("edit", [
    {"identity": "local:0000000000000000|fp32|none|w:0000000000000000"},  # another model's identity
    {"max_context": 7}, {"device": "cuda:0"}, {"device": "meta"}, {"vocab_size": 3},
    {"time": float("nan")}, {"time": 1e300}, {"time": "yesterday"}, {"files": [1]}, {"files": [None]},
    {"name": "someone else"}, {"info": {"trained_prefix_token_id": 7}},
])
def test_an_edited_record_never_serves_another_model_nor_fails(tiny, edit):
    """The forgeries a copied, restored or shared cache folder can hold: a load is this model's (deferred or
    read in full), never another's figures, never a traceback."""
    folder, _ = tiny
    full = load_causal_lm(str(folder), reuse=False)
    _, rec, write = _record(folder)
    write({**rec, **edit})
    lm = load_causal_lm(str(folder), reuse=False)
    _same_model(lm, full)
    assert lm.info.get("trained_prefix_token_id") is None


def test_a_tokenizer_elsewhere_is_never_read(tiny, tmp_path):
    """A record naming a tokenizer folder outside the model (the same size and probe, three ids swapped): the
    tokenizer is read from the model's own folder."""
    import shutil

    folder, _ = tiny
    full = load_causal_lm(str(folder), reuse=False)
    other = tmp_path / "other_tokenizer"
    shutil.copytree(folder, other)
    spec = json.loads((other / "tokenizer.json").read_text())
    vocab = spec["model"]["vocab"]
    words = [w for w in ("the", "of", "and") if w in vocab]
    ids = [vocab[w] for w in words]
    for w, i in zip(words, ids[1:] + ids[:1]):
        vocab[w] = i
    (other / "tokenizer.json").write_text(json.dumps(spec))
    _, rec, write = _record(folder)
    write({**rec, "tok_src": str(other)})
    lm = load_causal_lm(str(folder), reuse=False)
    _same_model(lm, full)
    assert lm.tokenizer("the end of the day and night").input_ids == \
        full.tokenizer("the end of the day and night").input_ids


def test_a_record_of_another_model_is_this_models_or_none(tiny, tmp_path):
    """Another model's record (its weights differ in one sampled element) copied in: refused, since its files
    are not this model's; the same record re-pointed at this model's files, digest and all: the identity read
    from the files is this model's, not the other's."""
    import shutil

    folder, _ = tiny
    full = load_causal_lm(str(folder), reuse=False)
    _, rec, write = _record(folder)
    other = tmp_path / "other"
    shutil.copytree(folder, other)
    f = other / "model.safetensors"
    count = full.model.get_input_embeddings().weight.numel()
    _bump(f, _element_offset(f, "model.embed_tokens.weight", 32 * (count - 1) // 63))
    theirs = load_causal_lm(str(other), reuse=False)
    assert theirs.identity.rsplit("|w:", 1)[-1] != full.identity.rsplit("|w:", 1)[-1]
    _, their_rec, _ = _record(other)
    write(their_rec)
    lm = load_causal_lm(str(folder), reuse=False)
    assert not isinstance(lm, DeferredLoadedModel)
    _same_model(lm, full)
    write({**their_rec, "files": rec["files"], "digest": rec["digest"]})
    lm = load_causal_lm(str(folder), reuse=False)
    assert isinstance(lm, DeferredLoadedModel)
    _same_model(lm, full)


def test_weights_in_the_caches_models_folder_are_not_a_local_models(tiny):
    """A record of a local folder whose weight files were put in the cache's ``models/`` folder (another model's
    copy there, with its digest): not this model's files, a full load."""
    import shutil

    folder, root = tiny
    full = load_causal_lm(str(folder), reuse=False)
    _, rec, write = _record(folder)
    planted = root / "models" / "planted"
    planted.mkdir(parents=True)
    shutil.copy(folder / "model.safetensors", planted / "model.safetensors")
    shutil.copy(folder / "config.json", planted / "config.json")
    write({**rec, "files": [str(planted / "model.safetensors")]})
    lm = load_causal_lm(str(folder), reuse=False)
    assert not isinstance(lm, DeferredLoadedModel)
    _same_model(lm, full)


def test_a_record_not_used_is_said_in_one_line(tiny):
    from mia_core.cache import collect_notes

    folder, _ = tiny
    load_causal_lm(str(folder), reuse=False)
    _, rec, write = _record(folder)
    write({**rec, "time": "yesterday"})
    with collect_notes() as notes:
        lm = load_causal_lm(str(folder), reuse=False)
    assert not isinstance(lm, DeferredLoadedModel)
    said = [n for n in notes if "load record" in n]
    assert len(said) == 1 and "\n" not in said[0] and "damaged (time)" in said[0], notes


def test_a_lora_targets_record_names_its_own_merged_copy_only(tiny, tmp_path):
    """A LoRA target on the tiny base: the second load is deferred, from the merged copy its files and its base's
    key; a record re-pointed at another folder of the cache's ``models/`` (the base's weights planted there, digest
    and all) is refused, and the load is the target's."""
    import shutil

    from mia_core.targets.target import make_target

    folder, root = tiny
    texts = [f"A short member text number {i} about rivers." for i in range(8)]
    target = tmp_path / "target"
    make_target(texts, base=str(folder), out_dir=target, method="lora", epochs=1,
                heldout_texts=["A held-out text about ships.", "Another one about hills."])
    full = load_causal_lm(str(target), reuse=False)
    again = load_causal_lm(str(target), reuse=False)
    assert isinstance(again, DeferredLoadedModel)
    _same_model(again, full)
    _, rec, write = _record(target)
    planted = root / "models" / "planted"
    planted.mkdir(parents=True)
    for name in ("model.safetensors", "config.json"):
        shutil.copy(folder / name, planted / name)
    from mia_core.models.deferred import files_digest

    write({**rec, "files": [str(planted / "model.safetensors")],
           "digest": files_digest([planted / "model.safetensors"])})
    lm = load_causal_lm(str(target), reuse=False)
    assert not isinstance(lm, DeferredLoadedModel)
    _same_model(lm, full)
