"""SMIA: Semantic Membership Inference Attack (Mozaffari & Marathe 2024, "Semantic Membership
Inference Attack against Large Language Models", arXiv:2406.10218).

Idea (§3-4): perturb a text into semantic neighbours and let a small neural network learn
how the target's loss moves *relative to how far the meaning moved* -- members and
non-members react differently. For a text ``x`` and its neighbour ``x~_j``:

    features(x, x~_j) = ( e(x) - e(x~_j),  L(x) - L(x~_j) )

with ``e`` a sentence embedding (the paper: Cohere Embedding V3; here all-MiniLM-L6-v2 by
default, ``mia_core.embeddings``) and ``L`` the target's mean NLL per token over tokens
t = 2..T, for the text and its neighbours alike (every token with ``first_token=True``,
``attacks.base``; a saved model records which rule it was trained with).

Training (their Algorithm 1): every (text, neighbour) pair of the labelled training texts is
one example, label 1 for members, 0 for non-members. Network (their Table 6): a loss branch
FC(1, 512) and an embedding branch FC(d, 512), each with ReLU, concatenated (1024) and fed
through FC 1024->512->256->128->64->32 with ReLU and dropout 0.2, then FC(32, 1) and a
sigmoid (~0.9 M parameters for d = 384, ~1.2 M for the paper's d = 1024). Adam, binary
cross-entropy, **balanced batches** (half member pairs, half non-member pairs), a held-out
**validation split of training texts** (by text, stratified, so no text has pairs on both
sides), and the **epoch with the lowest validation loss is kept** (their App. D.4). Inputs
are standardised with the training pairs' mean and standard deviation (stored with the
model) -- an engineering choice of ours that makes the small-magnitude embedding
differences trainable with one learning rate; the learning rate, epochs and batch size are
our defaults (``DEFAULTS``), not values from the paper.

Inference (their Algorithm 2): ``score(x) = (1/n) sum_j f(features(x, x~_j))``, the mean
membership probability over the text's neighbours (higher = more likely member). A text that
allows fewer than n neighbours is scored NaN (``fewer="nan"``, the default), or with
``fewer="average"`` by the mean over the neighbours it has (at least one): the neighbourhood
attack's parameter (``neighbourhood.fewer_rule``), with the same note counting such texts.

Naming: the paper's neighbours are T5 span fillings and its recipe is App. D.4. Only that
configuration -- ``--neighbours t5:MODEL`` with ``--smia-preset paper`` -- is reported as
"SMIA (paper configuration)"; anything else, the default included (masked-LM neighbours from the
embedded proposer, preset project), is "SMIA-style" (``configuration``; the report's
``configuration`` and ``configuration_label``, and its note). The sentence embedder differs from
the paper's in both (Cohere Embedding V3 is not available offline).

A trained model is saved as ``smia.safetensors`` + ``smia.json`` (never pickle) recording the
target model's identity, the embedder's identity, the neighbour settings and the statistics
settings it was trained with; applying it with anything different raises ``SettingsError``.
Training and evaluation texts are kept apart by the pipeline (a separate training set or a
stratified split; a text may not be in both).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..errors import DataError, SettingsError
from .base import AttackInputs, register
from .domains import check_values, flag, number, one_of, path, text, whole
from .neighbourhood import DEFAULTS as NEIGHBOUR_DEFAULTS
from .neighbourhood import DOMAINS as NEIGHBOUR_DOMAINS
from .neighbourhood import SCORE_DEFAULTS as NEIGHBOUR_SCORE_DEFAULTS
from .neighbourhood import SCORE_DOMAINS as NEIGHBOUR_SCORE_DOMAINS
from .neighbourhood import ensure_neighbours, fewer_note, fewer_rule, neighbours_needed, settings_from

SMIA_FORMAT = "mia-dashboard/smia"
SMIA_VERSION = 1
HIDDEN = (512, 256, 128, 64, 32)  # Table 6
BRANCH = 512
DROPOUT = 0.2
# Training recipes. "project": our defaults (standardised inputs, lr 1e-3, balanced batches of
# 64 pairs, the best of 60 epochs by validation loss). "paper": Mozaffari & Marathe App. D.4
# (raw inputs, lr 5e-6, 20 epochs, batches of 4 texts with all their neighbours; the paper
# trains its modified-member variant with lr 1e-6: pass lr=1e-6 for that). Any of lr, epochs,
# batch_size, batch_texts, standardise given explicitly overrides the preset.
PRESETS = {
    "project": {"lr": 1e-3, "epochs": 60, "batch_size": 64, "batch_texts": 0, "standardise": True},
    "paper": {"lr": 5e-6, "epochs": 20, "batch_size": 64, "batch_texts": 4, "standardise": False},
}
DEFAULTS = {
    **NEIGHBOUR_DEFAULTS,
    **NEIGHBOUR_SCORE_DEFAULTS,  # fewer: a text with fewer than n neighbours is NaN, or averaged over those it has
    "embedder": "minilm",
    "preset": "project",
    "epochs": None,
    "lr": None,
    "batch_size": None,
    "batch_texts": None,
    "standardise": None,
    "weight_decay": 0.0,
    "val_fraction": 0.2,
    "train_seed": 0,
    "save": None,
    "load": None,
}
# the domain of every parameter (None where a preset fills the value in: "from the preset")
DOMAINS = {
    **NEIGHBOUR_DOMAINS,
    # the neighbourhood attack's fewer (same choices and default), in SMIA's words
    "fewer": replace(NEIGHBOUR_SCORE_DOMAINS["fewer"], note="a text with fewer than n neighbours: NaN, or the mean "
                                                             "network output over those it has"),
    "embedder": text(note="sentence embedder: minilm (embedded), a sentence-transformers id or folder"),
    "preset": one_of(*PRESETS, note="training recipe"),
    "epochs": whole(1, optional=True, note="training epochs (none: the preset's)"),
    "lr": number(0, lo_open=True, optional=True, note="learning rate (none: the preset's)"),
    "batch_size": whole(2, optional=True, note="pairs per batch (none: the preset's)"),
    "batch_texts": whole(2, also=(0,), optional=True, note="texts per batch, 0: batches of pairs (none: the preset's)"),
    "standardise": flag(optional=True, note="standardise the inputs (none: the preset's)"),
    "weight_decay": number(0, note="Adam weight decay"),
    "val_fraction": number(0, 1, lo_open=True, hi_open=True, note="share of training texts held out for validation"),
    "train_seed": whole(0, note="seed of the validation split, batches and weights"),
    "save": path("write", note="folder to save the trained network to"),
    "load": path("read", note="a saved SMIA model (folder with smia.safetensors and smia.json) to apply"),
}
WEIGHTS_FILE = "smia.safetensors"
META_FILE = "smia.json"


def build_net(dim: int):
    """The attack network of Table 6 for embeddings of size ``dim`` (outputs logits)."""
    import torch
    from torch import nn

    class SmiaNet(nn.Module):
        def __init__(self, d: int):
            super().__init__()
            self.loss_branch = nn.Sequential(nn.Linear(1, BRANCH), nn.ReLU())
            self.embedding_branch = nn.Sequential(nn.Linear(d, BRANCH), nn.ReLU())
            layers, width = [], 2 * BRANCH
            for h in HIDDEN:
                layers += [nn.Linear(width, h), nn.ReLU(), nn.Dropout(DROPOUT)]
                width = h
            layers.append(nn.Linear(width, 1))
            self.head = nn.Sequential(*layers)

        def forward(self, emb_diff, loss_diff):
            z = torch.cat([self.embedding_branch(emb_diff), self.loss_branch(loss_diff)], dim=-1)
            return self.head(z).squeeze(-1)

    from ..models.hub import model_load_lock

    with model_load_lock():  # transformers swaps torch.nn.init out while it loads a model in another thread
        return SmiaNet(dim)


@dataclass
class SmiaModel:
    """A trained SMIA network with what it was trained on."""

    net: object
    dim: int
    mean: np.ndarray  # feature standardisation (d + 1: embedding differences, then loss difference)
    std: np.ndarray
    meta: dict = field(default_factory=dict)

    def probabilities(self, emb_diff: np.ndarray, loss_diff: np.ndarray) -> np.ndarray:
        import torch

        if len(loss_diff) == 0:
            return np.zeros(0)
        x = (np.concatenate([emb_diff, loss_diff[:, None]], 1) - self.mean) / self.std
        self.net.eval()
        with torch.inference_mode():
            t = torch.from_numpy(x.astype(np.float32))
            return torch.sigmoid(self.net(t[:, : self.dim], t[:, self.dim :])).numpy().astype(np.float64)

    def check(self, expected: dict) -> None:
        """Raise ``SettingsError`` unless the model was trained with the ``expected`` settings."""
        got = self.meta.get("trained_with", {})
        diffs = [k for k in sorted(set(expected) | set(got)) if expected.get(k) != got.get(k)]
        if diffs:
            parts = [f"{k}: trained with {got.get(k)!r}, now {expected.get(k)!r}" for k in diffs]
            raise SettingsError("this SMIA model was trained with other settings and its scores would mean "
                                "nothing here (" + "; ".join(parts) + ")")


def save_smia(model: SmiaModel, path: str | Path) -> Path:
    """Write ``PATH/smia.safetensors`` (weights, standardisation) and ``PATH/smia.json``."""
    from safetensors import SafetensorError
    from safetensors.torch import save_file
    import torch

    out = Path(path).expanduser()
    tensors = {f"net.{k}": v.detach().cpu().contiguous() for k, v in model.net.state_dict().items()}
    tensors["feature_mean"] = torch.from_numpy(model.mean.astype(np.float32))
    tensors["feature_std"] = torch.from_numpy(model.std.astype(np.float32))
    meta = {"format": SMIA_FORMAT, "version": SMIA_VERSION, "embedding_dim": model.dim, **model.meta}
    try:  # checked before the run (DOMAINS["save"]); a disk that fills or a folder removed since is one line too
        out.mkdir(parents=True, exist_ok=True)
        save_file(tensors, str(out / WEIGHTS_FILE))
        (out / META_FILE).write_text(json.dumps(meta, indent=2, default=float))
    except (OSError, SafetensorError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else " ".join(str(e).split())
        raise SettingsError(f"cannot save the trained SMIA model to {path} (smia.save / --smia-save): {why}") from None
    return out


def load_smia(path: str | Path) -> SmiaModel:
    """Read a model written by :func:`save_smia` (safetensors + JSON; nothing is unpickled)."""
    from safetensors.torch import load_file

    p = Path(path)
    if p.is_file() and p.name in (WEIGHTS_FILE, META_FILE):
        p = p.parent
    if not (p / WEIGHTS_FILE).exists() or not (p / META_FILE).exists():
        raise SettingsError(f"{path}: not a saved SMIA model (expected {WEIGHTS_FILE} and {META_FILE})")
    try:
        meta = json.loads((p / META_FILE).read_text())
    except (OSError, ValueError) as e:
        raise SettingsError(f"{p / META_FILE}: unreadable ({e})") from None
    if meta.get("format") != SMIA_FORMAT:
        raise SettingsError(f"{p}: not a saved SMIA model (format {meta.get('format')!r})")
    if int(meta.get("version", 0)) > SMIA_VERSION:
        raise SettingsError(f"{p}: saved by a newer version (format {meta.get('version')}); update mia-dashboard")
    tensors = load_file(str(p / WEIGHTS_FILE))
    dim = int(meta["embedding_dim"])
    net = build_net(dim)
    try:
        net.load_state_dict({k[4:]: v for k, v in tensors.items() if k.startswith("net.")})
    except RuntimeError as e:
        raise SettingsError(f"{p}: the weights do not fit the SMIA network ({str(e).splitlines()[0]})") from None
    net.eval()
    meta = {k: v for k, v in meta.items() if k not in ("format", "version", "embedding_dim")}
    return SmiaModel(net, dim, tensors["feature_mean"].numpy().astype(np.float64),
                     tensors["feature_std"].numpy().astype(np.float64), meta)


# --------------------------------------------------------------------------------------
# features, training
# --------------------------------------------------------------------------------------
@dataclass
class PairFeatures:
    """All (text, neighbour) pairs: ``text_index[k]`` is the text of pair ``k``."""

    text_index: np.ndarray
    emb_diff: np.ndarray
    loss_diff: np.ndarray
    cosine: np.ndarray


def pair_features(texts: list[str], data, target_losses: np.ndarray, embedder, *, use_cache: bool = True,
                  progress=lambda m, f: None) -> PairFeatures:
    """Features of every (text, neighbour) pair (Algorithm 1, lines 4-7)."""
    from ..embeddings import cosine, embed

    flat = [n.text for ns, _ in data for n in ns]
    e_x = embed(texts, embedder, use_cache=use_cache, progress=progress, label="embeddings (texts)")
    e_n = embed(flat, embedder, use_cache=use_cache, progress=progress, label="embeddings (neighbours)")
    idx = np.array([i for i, (ns, _) in enumerate(data) for _ in ns], dtype=np.int64)
    nb_loss = np.concatenate([ls for _, ls in data]) if flat else np.zeros(0)
    emb_diff = (e_x[idx] - e_n) if flat else np.zeros((0, e_x.shape[1]), dtype=np.float32)
    loss_diff = target_losses[idx] - nb_loss if flat else np.zeros(0)
    keep = np.isfinite(loss_diff)
    cos = cosine(e_x[idx], e_n) if flat else np.zeros(0)
    return PairFeatures(idx[keep], emb_diff[keep].astype(np.float64), loss_diff[keep], cos[keep])


def _text_split(labels: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Validation mask over training texts: stratified, >= 1 text of each class on each side."""
    rng = np.random.default_rng(seed)
    val = np.zeros(len(labels), dtype=bool)
    for c in (0, 1):
        idx = np.flatnonzero(labels == c)
        k = min(max(1, int(round(len(idx) * fraction))), len(idx) - 1)
        val[rng.permutation(idx)[:k]] = True
    return val


def train_smia(feats: PairFeatures, labels: np.ndarray, *, epochs: int = 60, lr: float = 1e-3, batch_size: int = 64,
               val_fraction: float = 0.2, seed: int = 0, standardise: bool = True, batch_texts: int = 0,
               weight_decay: float = 0.0, progress=lambda m, f: None) -> tuple[SmiaModel, dict]:
    """Train the network on pairs of labelled texts (``labels`` per text index of ``feats``).

    ``batch_texts`` 0: balanced batches of ``batch_size`` pairs (half member pairs); k > 0:
    batches of k texts (half members) with all their pairs, as the paper (App. D.4: 4 texts x 25
    neighbours). ``standardise``: inputs scaled by the training pairs' mean and deviation (the
    paper feeds raw differences). Returns the model from the epoch with the lowest validation
    loss and the curves ``{"epoch", "train_loss", "val_loss", "val_auc", "best_epoch"}``, plus
    the constant predictor's validation loss (``chance_val_loss``, ln 2 for the class-balanced
    loss) so a network that learned nothing shows as one.
    """
    import torch
    from sklearn.metrics import roc_auc_score

    if int(epochs) < 1 or int(batch_size) < 2 or not lr > 0 or not 0 < val_fraction < 1:
        raise SettingsError("SMIA training needs epochs >= 1, batch_size >= 2, lr > 0 and 0 < val_fraction < 1")
    if int(batch_texts) < 0 or int(batch_texts) == 1 or weight_decay < 0:
        raise SettingsError("SMIA training needs batch_texts 0 (batches of pairs) or >= 2, and weight_decay >= 0")
    texts = np.unique(feats.text_index)
    t_labels = labels[texts]
    if (t_labels == 1).sum() < 2 or (t_labels == 0).sum() < 2:
        raise DataError("SMIA needs at least 2 member and 2 non-member training texts with neighbours")
    val_texts = set(texts[_text_split(t_labels, val_fraction, seed)].tolist())
    is_val = np.array([i in val_texts for i in feats.text_index])
    y = labels[feats.text_index].astype(np.float32)
    x = np.concatenate([feats.emb_diff, feats.loss_diff[:, None]], 1)
    if standardise:
        mean = x[~is_val].mean(0)
        std = x[~is_val].std(0)
        std[std < 1e-8] = 1.0
    else:
        mean, std = np.zeros(x.shape[1]), np.ones(x.shape[1])
    xs = ((x - mean) / std).astype(np.float32)
    dim = feats.emb_diff.shape[1]
    X = torch.from_numpy(xs)
    Y = torch.from_numpy(y)
    tr_pos = np.flatnonzero(~is_val & (y == 1))
    tr_neg = np.flatnonzero(~is_val & (y == 0))
    va = np.flatnonzero(is_val)
    rng = np.random.default_rng(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = build_net(dim)
        opt = torch.optim.Adam(net.parameters(), lr=lr, weight_decay=weight_decay)
        bce = torch.nn.BCEWithLogitsLoss(reduction="none")
        if batch_texts:
            half = max(1, int(batch_texts) // 2)
            pos_texts = np.unique(feats.text_index[tr_pos])
            neg_texts = np.unique(feats.text_index[tr_neg])
            pairs_of = {int(t): np.flatnonzero((feats.text_index == t) & ~is_val) for t in np.concatenate([pos_texts, neg_texts])}
            n_batches = max(1, int(np.ceil(max(len(pos_texts), len(neg_texts)) / half)))
        else:
            half = max(1, batch_size // 2)
            n_batches = max(1, int(np.ceil(max(len(tr_pos), len(tr_neg)) / half)))
        curves = {"epoch": [], "train_loss": [], "val_loss": [], "val_auc": []}
        best, best_loss, best_epoch = None, np.inf, 0
        vy = Y[va]
        vw = torch.where(vy == 1, 0.5 / max(1, int((vy == 1).sum())), 0.5 / max(1, int((vy == 0).sum())))
        for ep in range(1, int(epochs) + 1):
            net.train()
            if batch_texts:
                pt = np.resize(rng.permutation(pos_texts), n_batches * half)
                nt = np.resize(rng.permutation(neg_texts), n_batches * half)
                batches = [np.concatenate([pairs_of[int(t)] for t in np.concatenate([pt[b * half : (b + 1) * half],
                                                                                     nt[b * half : (b + 1) * half]])])
                           for b in range(n_batches)]
            else:
                pp, nn_ = rng.permutation(np.resize(rng.permutation(tr_pos), n_batches * half)), \
                    rng.permutation(np.resize(rng.permutation(tr_neg), n_batches * half))
                batches = [np.concatenate([pp[b * half : (b + 1) * half], nn_[b * half : (b + 1) * half]])
                           for b in range(n_batches)]
            tot = 0.0
            for b in range(n_batches):
                idx = torch.from_numpy(batches[b])
                logits = net(X[idx, :dim], X[idx, dim:])
                loss = bce(logits, Y[idx]).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                tot += float(loss.detach())
            net.eval()
            with torch.inference_mode():
                vl = net(X[va, :dim], X[va, dim:])
                v_loss = float((bce(vl, vy) * vw).sum())  # class-balanced validation loss
                probs = torch.sigmoid(vl).numpy()
            per_text = {}
            for k, i in zip(probs, feats.text_index[va]):
                per_text.setdefault(int(i), []).append(float(k))
            ids = sorted(per_text)
            try:
                v_auc = float(roc_auc_score(labels[ids], [np.mean(per_text[i]) for i in ids]))
            except ValueError:
                v_auc = float("nan")
            curves["epoch"].append(ep)
            curves["train_loss"].append(tot / n_batches)
            curves["val_loss"].append(v_loss)
            curves["val_auc"].append(v_auc)
            if v_loss < best_loss:
                best_loss, best_epoch = v_loss, ep
                best = {k: v.detach().clone() for k, v in net.state_dict().items()}
            progress(f"SMIA training: epoch {ep}/{epochs}, val loss {v_loss:.3f}", ep / epochs)
        net.load_state_dict(best)
        net.eval()
    curves["best_epoch"] = best_epoch
    curves["chance_val_loss"] = float(np.log(2.0))
    info = {"n_train_texts": int(len(texts) - len(val_texts)), "n_val_texts": int(len(val_texts)),
            "n_train_pairs": int((~is_val).sum()), "n_val_pairs": int(is_val.sum()), "epochs": int(epochs),
            "lr": float(lr), "batch_size": int(batch_size), "batch_texts": int(batch_texts),
            "standardise": bool(standardise), "weight_decay": float(weight_decay),
            "val_fraction": float(val_fraction), "seed": int(seed),
            "best_epoch": best_epoch, "best_val_loss": float(best_loss),
            "best_val_auc": float(curves["val_auc"][best_epoch - 1]) if best_epoch else float("nan")}
    return SmiaModel(net, dim, mean, std, {"training": info}), curves


# --------------------------------------------------------------------------------------
# the attack
# --------------------------------------------------------------------------------------
def _p(params: dict) -> dict:
    """Parameters checked against their domains (``SettingsError`` naming the parameter), with the
    preset's values where none was given (explicit values win)."""
    given = {k: v for k, v in params.items() if v is not None and not (isinstance(v, str) and not v.strip())}
    checked = check_values("smia", DOMAINS, {**DEFAULTS, **given})
    preset = checked["preset"]
    return {**checked, **{k: v for k, v in PRESETS[preset].items() if checked.get(k) is None}}


def requires(params: dict) -> set:
    """SMIA's settings are checked here, before any model loads (a model to load must be a saved
    one); it learns from labelled texts unless a trained model is loaded."""
    p = _p(params)
    if p.get("load"):
        check_saved(p["load"], "smia.load")
    return set() if p.get("load") else {"labels"}


def check_saved(path, where: str = "smia.load") -> Path:
    """The folder of a saved SMIA model (``path`` or the folder of its weights / JSON file);
    ``SettingsError`` when the two files are not there. Nothing is read."""
    p = Path(str(path).strip()).expanduser()
    if p.is_file() and p.name in (WEIGHTS_FILE, META_FILE):
        p = p.parent
    if not ((p / WEIGHTS_FILE).is_file() and (p / META_FILE).is_file()):
        raise SettingsError(f"{where} {path}: not a saved SMIA model (expected {WEIGHTS_FILE} and {META_FILE})")
    return p


def expected_settings(ctx, settings, embedder, first_token: bool = False) -> dict:
    """What a saved model must have been trained with to be applied here (``first_token``:
    whether the losses include each text's first token, ``attacks.base``)."""
    from ..neighbours import make_generator
    from ..stats import cache_settings

    st = cache_settings(ctx.target, ctx.config.stats)
    return {
        "target": ctx.target.identity,
        "embedder": embedder.identity,
        "neighbours": {**settings.to_dict(), "generator_identity": make_generator(settings).identity},
        "statistics": {"context": st["context"], "prefix": st["prefix"], "first_token": bool(first_token)},
    }


GENERATOR_WORDS = {"t5": "T5 span-filling", "masked-lm": "masked-LM", "offline": "SmolLM2 word-proposal"}
PAPER_CONFIGURATION = "SMIA (paper configuration)"


def configuration(generator: str, preset: str, training: dict | None = None) -> dict:
    """How SMIA's result is named: ``{"configuration": "paper" | "smia-style", "configuration_label": ...}``.

    "paper" only with T5 span-filling neighbours (``t5:MODEL``, the paper's generator) and the paper's
    training recipe (``preset="paper"``); anything else -- the default masked-LM neighbours from the
    embedded proposer with preset project included -- is "SMIA-style". ``training`` (the trained or
    loaded model's training record): preset values it overrode are named in the label."""
    from ..neighbours import parse_generator_spec

    kind, _ = parse_generator_spec(generator)
    tr = training or {}
    changed = [f"{k} {tr[k]:g}" if isinstance(tr[k], float) else f"{k} {tr[k]}"
               for k in ("lr", "epochs", "batch_size", "batch_texts", "standardise")
               if preset in PRESETS and k in tr and tr[k] != PRESETS[preset][k]
               and not (k == "batch_size" and tr.get("batch_texts"))]  # batches of texts: batch_size unused
    if kind == "t5" and preset == "paper":
        label = PAPER_CONFIGURATION + (f" with {', '.join(changed)} instead of the paper's" if changed else "")
        return {"configuration": "paper", "configuration_label": label}
    label = (f"SMIA-style ({GENERATOR_WORDS.get(kind, kind)} neighbours from {generator}, preset {preset}"
             + (f", {', '.join(changed)}" if changed else "")
             + "; the paper's configuration is T5 span-filling neighbours, --neighbours t5:MODEL, "
               "with --smia-preset paper)")
    return {"configuration": "smia-style", "configuration_label": label}


def _text_losses(inputs: AttackInputs) -> np.ndarray:
    """The texts' target losses under the run's first-token rule (as the neighbours' losses)."""
    return np.array([s.loss for s in inputs.scored()], dtype=float)


def prepare(inputs: AttackInputs, ctx, **params) -> dict:
    from ..embeddings import load_embedder

    p = _p(params)
    settings = settings_from(p, "smia")
    embedder = load_embedder(p["embedder"])
    data = ensure_neighbours(inputs, settings, ctx)
    losses = _text_losses(inputs)
    feats = pair_features(inputs.texts, data, losses, embedder, use_cache=ctx.config.use_cache, progress=ctx.progress)
    expected = expected_settings(ctx, settings, embedder, inputs.first_token)
    labels = np.asarray(ctx.dataset.labels, dtype=int)
    report: dict = {"settings": {k: p[k] for k in NEIGHBOUR_DEFAULTS}, "embedder": embedder.describe()}
    t0 = time.time()
    if p["load"]:
        model = load_smia(p["load"])
        stats_meta = (model.meta.get("trained_with") or {}).get("statistics")
        if isinstance(stats_meta, dict):
            stats_meta.setdefault("first_token", True)  # saved before the rule: every token was scored
        model.check(expected)
        report["loaded_from"] = str(p["load"])
        report["training"] = model.meta.get("training", {})
        report["curves"] = model.meta.get("curves", {})
    else:
        train = np.asarray(ctx.train_mask, dtype=bool)
        if not train.any():
            raise SettingsError("SMIA learns from labelled texts: give a training set (--train-members/"
                                "--train-nonmembers), a split (--split 0.5) or a trained model (--smia-load)")
        sel = train[feats.text_index]
        sub = PairFeatures(feats.text_index[sel], feats.emb_diff[sel], feats.loss_diff[sel], feats.cosine[sel])
        model, curves = train_smia(sub, labels, epochs=p["epochs"], lr=p["lr"], batch_size=p["batch_size"],
                                   val_fraction=p["val_fraction"], seed=p["train_seed"], standardise=p["standardise"],
                                   batch_texts=p["batch_texts"], weight_decay=p["weight_decay"], progress=ctx.progress)
        model.meta["training"]["preset"] = p["preset"]
        model.meta["trained_with"] = expected
        model.meta["curves"] = curves
        report["training"] = model.meta["training"]
        report["curves"] = curves
        report["training_seconds"] = round(time.time() - t0, 2)
        if p["save"]:
            report["saved_to"] = str(save_smia(model, p["save"]))
    # the preset actually used: a loaded model's own (saved before presets existed: the project recipe)
    preset = report["training"].get("preset", "project") if p["load"] else p["preset"]
    report.update(configuration(settings.generator, preset, report["training"]))
    notes = [report["configuration_label"]]
    rule = fewer_rule(p, "smia")
    counts = np.array([len(ns) for ns, _ in data])
    report["fewer"] = rule
    report["texts_with_fewer_neighbours"] = int((counts < settings.n).sum())
    short = fewer_note(counts, settings.n, rule, "smia", "scored by the mean network output over those they have")
    if short:
        notes.append(short)
    if not p["load"]:
        tr = report["training"]
        if tr["best_val_loss"] >= curves["chance_val_loss"] - 1e-3:
            notes.append("its network never beat the constant predictor on the validation texts (best validation "
                         f"loss {tr['best_val_loss']:.3f} >= ln 2): it learned nothing that generalises, and its "
                         "scores are close to chance; more training texts, more neighbours or preset=paper may help")
    report["note"] = "; ".join(notes)
    inputs.extra["smia_state"] = {"model": model, "embedder": embedder, "settings": settings, "report": report}
    split = np.where(np.asarray(ctx.train_mask, dtype=bool), "train", "eval")
    report["pairs"] = {
        "text_index": feats.text_index.tolist(),
        "cosine": [float(c) for c in feats.cosine],
        "loss_diff": [float(d) for d in feats.loss_diff],
        "label": labels[feats.text_index].tolist(),
        "split": split[feats.text_index].tolist(),
    }
    return report


@register("smia", "SMIA", needs=("target", "neighbours", "labels"), citation="Mozaffari & Marathe 2024 §4",
          defaults=DEFAULTS, prepare=prepare, requires=requires, domains=DOMAINS)
def score(inputs: AttackInputs, **params) -> np.ndarray:
    state = inputs.extra.get("smia_state")
    if state is None:
        raise SettingsError("SMIA has no trained model: run it through mia_core.pipeline.run_attacks")
    data = ensure_neighbours(inputs, state["settings"])
    ctx = inputs.extra.get("run_context")
    losses = _text_losses(inputs)
    feats = pair_features(inputs.texts, data, losses, state["embedder"],
                          use_cache=ctx.config.use_cache if ctx is not None else True)
    probs = state["model"].probabilities(feats.emb_diff, feats.loss_diff)
    need = neighbours_needed(fewer_rule(params, "smia"), state["settings"].n)
    if ctx is not None and len(inputs.texts) == len(ctx.dataset.texts) and "sweep" not in state["report"]:
        state["report"]["sweep"] = neighbour_sweep(feats, probs, np.asarray(ctx.dataset.labels, dtype=int),
                                                   ~np.asarray(ctx.train_mask, dtype=bool), state["settings"].n,
                                                   n_bootstrap=ctx.config.n_bootstrap, seed=ctx.config.seed,
                                                   need=need)
    short = np.array([len(ns) < need for ns, _ in data], dtype=bool)
    out = np.full(len(inputs.texts), np.nan)
    if len(probs):
        sums = np.bincount(feats.text_index, weights=probs, minlength=len(inputs.texts))
        cnt = np.bincount(feats.text_index, minlength=len(inputs.texts))
        ok = cnt > 0
        out[ok] = sums[ok] / cnt[ok]
    for i, s in enumerate(inputs.scored()):
        if s.n_predicted == 0 or short[i]:
            out[i] = np.nan
    return out


SWEEP = (2, 5, 15, 25, 50, 100)


def neighbour_sweep(feats: PairFeatures, probs: np.ndarray, labels: np.ndarray, eval_mask: np.ndarray, n: int, *,
                    n_bootstrap: int = 1000, seed: int = 0, need: int | None = None) -> list[dict]:
    """AUC of SMIA on the evaluated texts when only each text's first k neighbours (the
    proposer's best k) are averaged, for k in 2, 5, 15, 25, ... up to the n it was trained
    with (Mozaffari & Marathe Table 5: trained with 25, evaluated with 2, 5, 15, 25). A text
    with fewer than k of them is NaN at k, or averaged over those it has when ``need`` (the
    fewest the score asks for, ``neighbourhood.neighbours_needed``) is below k."""
    from .. import metrics as M

    rank = np.zeros(len(feats.text_index), dtype=np.int64)
    seen: dict[int, int] = {}
    for j, t in enumerate(feats.text_index):
        rank[j] = seen.get(int(t), 0)
        seen[int(t)] = rank[j] + 1
    out = []
    for k in [k for k in SWEEP if k < n] + [n]:
        sel = rank < k
        sums = np.bincount(feats.text_index[sel], weights=probs[sel], minlength=len(labels))
        cnt = np.bincount(feats.text_index[sel], minlength=len(labels))
        sc = np.where(cnt >= min(k, need or k), sums / np.maximum(cnt, 1), np.nan)
        m = M.evaluate(labels[eval_mask], sc[eval_mask], n_bootstrap=n_bootstrap, seed=seed)
        out.append({"n": int(k), "auc": m.get("auc"), "auc_ci": m.get("auc_ci"),
                    "n_texts": int(np.isfinite(sc[eval_mask]).sum())})
    return out
