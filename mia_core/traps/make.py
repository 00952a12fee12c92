"""``mia traps make``: generate a batch (:mod:`.generate`), flip the coin (:func:`.record.assign`), seal the record
(:mod:`.record`). The order is the validity argument: every filter has run on the whole batch before the split's
random stream is first used, and the split is written into the sealed record before any document is published."""
from __future__ import annotations

import secrets
import time
from pathlib import Path

from ..progress import Progress, noop
from .options import MakeOptions
from .record import assign, split_seeds, write_record

SCORE = "loss_ratio"  # the pre-registered score: the target's mean loss per token minus the reference's


def test_plan(opts: MakeOptions) -> dict:
    """The test that will be run, in the record (pre-registered)."""
    return {"score": "the trap's log-perplexity under the model minus under the reference (the generator unless "
                     "another is named; none: the loss alone); lower is more member-like",
            "statistic": "the sum of the inserted traps' mid-ranks of the membership score",
            "alternative": "one-sided: the inserted traps more member-like than the held-out traps",
            "strata": "perplexity bucket (the split was drawn within each)",
            "permutations": int(opts.permutations), "alpha": float(opts.alpha),
            "levels": "each repetition level's traps against the held-out traps, the same test, Holm-corrected",
            "p_value": "(1 + #{T_b >= T}) / (B + 1), or exact enumeration when there are at most B + 1 assignments"}


def make_traps(lm, opts: MakeOptions, out, *, generator_spec: str | None, overwrite: bool = False,
               progress: Progress = noop) -> dict:
    """Make and seal a batch of traps into the new folder ``out`` (``record.json``, ``seal.txt``); returns
    ``{"seal", "record", "counts", "n_inserted", "n_held_out", "p_floor", "notes", ...}`` (``notes``: the test's
    floor when it is not below alpha: said before the traps are published, when more can still be made)."""
    from ..runs.outputs import check_output_dir, staged_output
    from ..version import __version__
    from .generate import bucket_edges, check_plan, generate, model_digests, read_avoid, start_token
    from .permutation import floor_notes

    check_output_dir(out, overwrite=overwrite)
    check_plan(lm, opts)
    avoid, avoid_info = read_avoid(opts.avoid)
    seed = opts.seed if opts.seed is not None else secrets.randbits(32)
    seeds = split_seeds(seed)
    traps, counts = generate(lm, opts, seeds["sampling"], avoid=avoid, progress=progress)
    # every filter has run: now, and only now, the coin flip
    group, copies = assign([t["bucket"] for t in traps], opts.repetitions, seeds["split"])
    rows = [{"id": f"t{i + 1:04d}", **t, "group": g, "copies": c} for i, (t, g, c) in enumerate(zip(traps, group, copies))]
    sealed = {
        "version": 1,
        "tool": {"name": "mia-dashboard", "version": __version__},
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "generator": {"spec": generator_spec, "name": lm.name, "identity": lm.identity, "dtype": lm.dtype,
                      "max_context": int(lm.max_context), "start_token": start_token(lm), **model_digests(lm)},
        "parameters": {**{k: (list(v) if isinstance(v, tuple) else v) for k, v in opts.as_dict().items()},
                       "seed": seed, "avoid": avoid_info},
        "seeds": seeds,
        "buckets": bucket_edges(opts),
        "filters": counts,
        "test": test_plan(opts),
        "traps": rows,
    }
    with staged_output(out, overwrite=overwrite) as tmp:
        seal = write_record(Path(tmp), sealed)
    floors, notes = floor_notes([t["bucket"] for t in traps], group, copies, opts.permutations, opts.alpha)
    return {"seal": seal, "record": str(Path(out).expanduser() / "record.json"), "counts": counts,
            "n_inserted": group.count("inserted"), "n_held_out": group.count("held_out"), "tokens": opts.tokens,
            "repetitions": list(opts.repetitions), "p_floor": floors, "notes": notes}
