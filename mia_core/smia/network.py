"""The SMIA network (Mozaffari & Marathe 2024, Table 6) and a trained model with its scaling.

:func:`build_net`: a loss branch FC(1, 512) and an embedding branch FC(d, 512), each with ReLU,
concatenated (1024) and fed through FC 1024->512->256->128->64->32 with ReLU and dropout 0.2,
then FC(32, 1) (logits; the sigmoid is applied by :meth:`SmiaModel.probabilities`). About
0.9 M parameters for d = 384 (all-MiniLM-L6-v2), 1.2 M for the paper's d = 1024.

:class:`SmiaModel`: the network, the feature standardisation it was trained with and its
metadata (what it was trained with, its training record and curves; ``store`` writes them).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import SettingsError

HIDDEN = (512, 256, 128, 64, 32)  # Table 6
BRANCH = 512
DROPOUT = 0.2


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
        """The membership probability of each (text, neighbour) pair (Algorithm 2, inner term)."""
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
