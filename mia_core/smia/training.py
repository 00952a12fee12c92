"""Training the SMIA network (Mozaffari & Marathe 2024, Algorithm 1 and App. D.4).

Every (text, neighbour) pair of the labelled training texts is one example, label 1 for
members, 0 for non-members. Adam, binary cross-entropy, **balanced batches** (half member
pairs, half non-member pairs; or, as the paper, batches of texts with all their pairs), a
held-out **validation split of training texts** (by text, stratified, so no text has pairs on
both sides: ``mia_core.data.split_mask``), and the **epoch with the lowest validation loss is
kept** (App. D.4). Inputs are standardised with the training pairs' mean and standard deviation
(stored with the model) -- an engineering choice of ours that makes the small-magnitude
embedding differences trainable with one learning rate; the learning rate, epochs and batch
size of the ``project`` preset are our defaults, not values from the paper.
"""
from __future__ import annotations

import numpy as np

from ..data import split_mask
from ..errors import DataError, SettingsError
from .features import PairFeatures
from .network import SmiaModel, build_net

# Training recipes. "project": our defaults (standardised inputs, lr 1e-3, balanced batches of
# 64 pairs, the best of 60 epochs by validation loss). "paper": Mozaffari & Marathe App. D.4
# (raw inputs, lr 5e-6, 20 epochs, batches of 4 texts with all their neighbours; the paper
# trains its modified-member variant with lr 1e-6: pass lr=1e-6 for that). Any of lr, epochs,
# batch_size, batch_texts, standardise given explicitly overrides the preset.
PRESETS = {
    "project": {"lr": 1e-3, "epochs": 60, "batch_size": 64, "batch_texts": 0, "standardise": True},
    "paper": {"lr": 5e-6, "epochs": 20, "batch_size": 64, "batch_texts": 4, "standardise": False},
}


def _check(epochs, lr, batch_size, val_fraction, batch_texts, weight_decay) -> None:
    if int(epochs) < 1 or int(batch_size) < 2 or not lr > 0 or not 0 < val_fraction < 1:
        raise SettingsError("SMIA training needs epochs >= 1, batch_size >= 2, lr > 0 and 0 < val_fraction < 1")
    if int(batch_texts) < 0 or int(batch_texts) == 1 or weight_decay < 0:
        raise SettingsError("SMIA training needs batch_texts 0 (batches of pairs) or >= 2, and weight_decay >= 0")


def _scaling(x: np.ndarray, train: np.ndarray, standardise: bool) -> tuple[np.ndarray, np.ndarray]:
    """Mean and deviation of the training pairs' features (zeros and ones: raw inputs)."""
    if not standardise:
        return np.zeros(x.shape[1]), np.ones(x.shape[1])
    mean = x[train].mean(0)
    std = x[train].std(0)
    std[std < 1e-8] = 1.0
    return mean, std


class _Batches:
    """One epoch's balanced batches: ``batch_texts`` 0, ``batch_size`` pairs (half member pairs);
    k > 0, k texts (half members) with all their training pairs."""

    def __init__(self, text_index: np.ndarray, tr_pos: np.ndarray, tr_neg: np.ndarray, is_val: np.ndarray,
                 batch_size: int, batch_texts: int):
        self.batch_texts, self.tr_pos, self.tr_neg = batch_texts, tr_pos, tr_neg
        if batch_texts:
            self.half = max(1, int(batch_texts) // 2)
            self.pos_texts = np.unique(text_index[tr_pos])
            self.neg_texts = np.unique(text_index[tr_neg])
            self.pairs_of = {int(t): np.flatnonzero((text_index == t) & ~is_val)
                             for t in np.concatenate([self.pos_texts, self.neg_texts])}
            self.n = max(1, int(np.ceil(max(len(self.pos_texts), len(self.neg_texts)) / self.half)))
        else:
            self.half = max(1, batch_size // 2)
            self.n = max(1, int(np.ceil(max(len(tr_pos), len(tr_neg)) / self.half)))

    def draw(self, rng: np.random.Generator) -> list[np.ndarray]:
        """The pair indices of each batch of one epoch."""
        h, n = self.half, self.n
        if self.batch_texts:
            pt = np.resize(rng.permutation(self.pos_texts), n * h)
            nt = np.resize(rng.permutation(self.neg_texts), n * h)
            return [np.concatenate([self.pairs_of[int(t)] for t in np.concatenate([pt[b * h : (b + 1) * h],
                                                                                  nt[b * h : (b + 1) * h]])])
                    for b in range(n)]
        pp = rng.permutation(np.resize(rng.permutation(self.tr_pos), n * h))
        nn_ = rng.permutation(np.resize(rng.permutation(self.tr_neg), n * h))
        return [np.concatenate([pp[b * h : (b + 1) * h], nn_[b * h : (b + 1) * h]]) for b in range(n)]


def _epoch(net, opt, bce, X, Y, dim: int, batches: list[np.ndarray]) -> float:
    """One pass over the batches; the mean training loss."""
    import torch

    net.train()
    tot = 0.0
    for batch in batches:
        idx = torch.from_numpy(batch)
        loss = bce(net(X[idx, :dim], X[idx, dim:]), Y[idx]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        tot += float(loss.detach())
    return tot / len(batches)


def _validate(net, bce, X, Y, dim: int, va: np.ndarray, text_index: np.ndarray,
              labels: np.ndarray) -> tuple[float, float]:
    """Class-balanced validation loss over the validation pairs, and the AUC of the validation
    texts' mean outputs (NaN with one class)."""
    import torch
    from sklearn.metrics import roc_auc_score

    net.eval()
    vy = Y[va]
    vw = torch.where(vy == 1, 0.5 / max(1, int((vy == 1).sum())), 0.5 / max(1, int((vy == 0).sum())))
    with torch.inference_mode():
        vl = net(X[va, :dim], X[va, dim:])
        v_loss = float((bce(vl, vy) * vw).sum())  # class-balanced validation loss
        probs = torch.sigmoid(vl).numpy()
    per_text: dict[int, list[float]] = {}
    for k, i in zip(probs, text_index[va]):
        per_text.setdefault(int(i), []).append(float(k))
    ids = sorted(per_text)
    try:
        return v_loss, float(roc_auc_score(labels[ids], [np.mean(per_text[i]) for i in ids]))
    except ValueError:
        return v_loss, float("nan")


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

    _check(epochs, lr, batch_size, val_fraction, batch_texts, weight_decay)
    texts = np.unique(feats.text_index)
    t_labels = labels[texts]
    if (t_labels == 1).sum() < 2 or (t_labels == 0).sum() < 2:
        raise DataError("SMIA needs at least 2 member and 2 non-member training texts with neighbours")
    val_texts = set(texts[split_mask(t_labels, val_fraction, seed)].tolist())  # True: held out for validation
    is_val = np.array([i in val_texts for i in feats.text_index])
    y = labels[feats.text_index].astype(np.float32)
    x = np.concatenate([feats.emb_diff, feats.loss_diff[:, None]], 1)
    mean, std = _scaling(x, ~is_val, standardise)
    dim = feats.emb_diff.shape[1]
    X = torch.from_numpy(((x - mean) / std).astype(np.float32))
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
        plan = _Batches(feats.text_index, tr_pos, tr_neg, is_val, batch_size, batch_texts)
        curves = {"epoch": [], "train_loss": [], "val_loss": [], "val_auc": []}
        best, best_loss, best_epoch = None, np.inf, 0
        for ep in range(1, int(epochs) + 1):
            train_loss = _epoch(net, opt, bce, X, Y, dim, plan.draw(rng))
            v_loss, v_auc = _validate(net, bce, X, Y, dim, va, feats.text_index, labels)
            for k, v in (("epoch", ep), ("train_loss", train_loss), ("val_loss", v_loss), ("val_auc", v_auc)):
                curves[k].append(v)
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


def train_on(feats: PairFeatures, labels: np.ndarray, train_mask, p: dict, expected: dict,
             progress=lambda m, f: None) -> tuple[SmiaModel, dict]:
    """The network trained on the pairs of the run's training texts (``train_mask``, one flag per
    text) with the attack's checked parameters ``p`` (the preset's values filled in); its metadata
    records the preset, what it was trained with (``expected``) and the curves."""
    train = np.asarray(train_mask, dtype=bool)
    if not train.any():
        raise SettingsError("SMIA learns from labelled texts: give a training set ({train_members}/"
                            "{train_nonmembers}), a split ({split} 0.5) or a trained model ({smia.load})",
                            options=("train_members", "train_nonmembers", "split", "smia.load"))
    model, curves = train_smia(feats.select(train[feats.text_index]), labels, epochs=p["epochs"], lr=p["lr"],
                               batch_size=p["batch_size"], val_fraction=p["val_fraction"], seed=p["train_seed"],
                               standardise=p["standardise"], batch_texts=p["batch_texts"],
                               weight_decay=p["weight_decay"], progress=progress)
    model.meta["training"]["preset"] = p["preset"]
    model.meta["trained_with"] = expected
    model.meta["curves"] = curves
    return model, curves


def untrained_note(training: dict, curves: dict) -> str | None:
    """A note when the network never beat the constant predictor on the validation texts."""
    if not training["best_val_loss"] >= curves["chance_val_loss"] - 1e-3:  # (a NaN loss: no note)
        return None
    return ("its network never beat the constant predictor on the validation texts (best validation "
            f"loss {training['best_val_loss']:.3f} >= ln 2): it learned nothing that generalises, and its "
            "scores are close to chance; more training texts, more neighbours or preset=paper may help")
