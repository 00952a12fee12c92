"""The sidebar model panel, shown by every page: target, optional reference, dtype, quantisation,
device, ``trust_remote_code`` (off by default), with load time and memory.

Choices survive page changes: each widget writes through to a plain session-state key
(``mp_*``) that the next page reads back (Streamlit forgets widget state of widgets a page does
not draw). Models are loaded through ``dashboard.loaders.load_model`` (cached across reruns,
pages and sessions); a failed load shows its reason in an error box.
"""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from mia_core.errors import MiaError
from mia_core.models import DTYPES, EMBEDDED_NAME, QUANTIZE
from mia_core.formatting import fmt_bytes, fmt_seconds
from mia_core.targets.demo import installed_demo

from .loaders import DEFAULTS, load_model, load_with_progress  # noqa: F401 - DEFAULTS: the panel's widget defaults
from .options import worded
from .ui import md_text

EMBEDDED_LABEL = "SmolLM2-135M (embedded)"  # short: the sidebar's select box cuts longer names
TARGET_OPTIONS = ("smollm2", "demo", "custom")
REFERENCE_OPTIONS = ("none", "smollm2", "custom")
_LABELS = {
    "smollm2": EMBEDDED_LABEL,
    "demo": "Demo target (fine-tuned)",
    "custom": "Hub id, folder or .gguf…",
    "none": "None",
}
@dataclass
class ModelPanel:
    """What the user chose in the sidebar, and the loaded models (None when not loaded / failed)."""

    target_spec: str | None
    reference_spec: str | None
    dtype: str
    quantize: str
    device: str
    trust_remote_code: bool
    target: object | None = None
    reference: object | None = None
    target_error: str | None = None
    reference_error: str | None = None
    status: object | None = None  # sidebar placeholder for the load status

    def load(self, need_reference: bool = True) -> "ModelPanel":
        """Load the chosen models (cached) and show their status in the sidebar."""
        _load_into(self, need_reference)
        self.show_status()
        return self

    def show_status(self, note: str | None = None) -> None:
        if self.status is None:
            return
        with self.status.container():
            if note:
                st.caption(note)
            if self.target is not None:
                st.caption("Target: " + _status_line(self.target))
            elif self.target_error:
                st.error(f"Target not loaded: {md_text(self.target_error)}")
            if self.reference is not None:
                st.caption("Reference: " + _status_line(self.reference))
            elif self.reference_error:
                st.error(f"Reference not loaded: {md_text(self.reference_error)}")
            if not note and self.target is None and not self.target_error:
                st.caption("Models load when a page needs them.")

    def load_target(self):
        return load_model(self.target_spec, self.dtype, self.quantize, self.device, self.trust_remote_code)

    def load_reference(self):
        if not self.reference_spec:
            return None
        return load_model(self.reference_spec, self.dtype, "none", self.device, self.trust_remote_code)


def _persist(key: str) -> None:
    st.session_state[key] = st.session_state["_" + key]


def _widget(kind, label: str, key: str, **kw):
    """A widget whose value is mirrored in ``st.session_state[key]`` (survives page switches)."""
    if key not in st.session_state:
        st.session_state[key] = DEFAULTS[key]
    st.session_state["_" + key] = st.session_state[key]
    return kind(label, key="_" + key, on_change=_persist, args=(key,), **kw)


def _device_options() -> list[str]:
    opts = ["auto", "cpu"]
    try:
        import torch

        if torch.cuda.is_available():
            opts += ["cuda"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            opts.append("mps")
    except ImportError:  # pragma: no cover - torch is a hard requirement
        pass
    return opts


def _spec(choice: str, custom: str, demo: dict | None) -> str | None:
    if choice == "smollm2":
        return EMBEDDED_NAME
    if choice == "demo":
        return str(demo["target"]) if demo and demo.get("target") else None
    if choice == "none":
        return None
    return custom.strip() or None


def target_choice(source: str | None) -> tuple[str, str] | None:
    """The model panel's (choice, custom text) that loads ``source`` (a run's ``target.source``:
    the embedded name, a hub id or a path); None when it cannot be loaded from here."""
    from pathlib import Path

    if not source:
        return None
    if source == EMBEDDED_NAME:
        return "smollm2", ""
    demo = installed_demo()
    if demo and demo.get("target") and Path(source) == Path(str(demo["target"])).resolve():
        return "demo", ""
    return "custom", source


def switch_target(source: str | None, dtype: str | None = None, quantize: str | None = None, *,
                  reference: str | None = None) -> bool:
    """Point the model panel at ``source`` (and its precision) for the next rerun; ``reference``: a run's
    ``reference.source``, set as the panel's reference too (so the reference attack of that run can be
    placed), or no reference when the run had none."""
    choice = target_choice(source)
    if choice is None:
        return False
    st.session_state["mp_target"], custom = choice
    if custom:
        st.session_state["mp_target_custom"] = custom
    ref = target_choice(reference) if reference else ("none", "")
    if ref is not None:
        st.session_state["mp_reference"] = "smollm2" if ref[0] == "smollm2" else ("none" if ref[0] == "none" else "custom")
        if st.session_state["mp_reference"] == "custom":
            st.session_state["mp_reference_custom"] = reference
    if quantize in QUANTIZE:
        st.session_state["mp_quantize"] = quantize
    if quantize in (None, "none") and dtype in DTYPES:
        st.session_state["mp_dtype"] = dtype
    return True


def _status_line(lm) -> str:
    mem = lm.memory_bytes
    loaded = (f"loaded in {fmt_seconds(lm.load_seconds)}" if getattr(lm, "weights_loaded", True) else
              "weights read when a pass needs them (checked against an earlier load)")
    parts = [f"**{lm.name}**", lm.dtype, lm.quantize if lm.quantize != "none" else "", lm.device,
             f"{lm.n_params / 1e6:.0f}M params", loaded, fmt_bytes(mem) if mem else ""]
    return " · ".join(p for p in parts if p)


def model_panel(*, load: bool = True, need_reference: bool = True) -> ModelPanel:
    """Draw the sidebar model panel and (when ``load``) load the chosen models.

    ``need_reference=False`` leaves the reference unloaded (pages that cannot use one). With
    ``load=False`` a page may call ``panel.load()`` later, once it knows it needs the models.
    """
    demo = installed_demo()
    target_opts = [o for o in TARGET_OPTIONS if o != "demo" or demo]
    if st.session_state.get("mp_target") not in target_opts:
        st.session_state["mp_target"] = "smollm2"
    sb = st.sidebar
    with sb:
        st.header("Model")
        choice = _widget(st.selectbox, "Target model", "mp_target", options=target_opts,
                         format_func=lambda o: _LABELS[o],
                         help="The model audited: was it trained on the texts? The embedded model needs no download.")
        custom = ""
        if choice == "custom":
            custom = _widget(st.text_input, "Target: hub id, local folder or .gguf file", "mp_target_custom",
                             placeholder="HuggingFaceTB/SmolLM2-135M or /path/to/model",
                             help="A fine-tuned target folder (written by `python -m mia_core make-target`) works too.")
        ref_choice = _widget(st.selectbox, "Reference model (optional)", "mp_reference", options=list(REFERENCE_OPTIONS),
                             format_func=lambda o: _LABELS[o],
                             help="Needed by the reference-model attack: a model trained on similar data but not on "
                                  "the audited texts (for a fine-tuned target, its base model).")
        ref_custom = ""
        if ref_choice == "custom":
            ref_custom = _widget(st.text_input, "Reference: hub id, local folder or .gguf file", "mp_reference_custom")
        with st.expander("Precision and device", expanded=False):
            dtype = _widget(st.selectbox, "dtype", "mp_dtype", options=list(DTYPES),
                            help="auto = fp32 on CPU (exact and fastest on most CPUs), bf16/fp16 on a GPU.")
            quant = _widget(st.selectbox, "Quantisation (target)", "mp_quantize", options=list(QUANTIZE),
                            help="int8 / int4 through bitsandbytes; compare runs to see what quantisation does to the attacks.")
            devs = _device_options()
            if st.session_state.get("mp_device") not in devs:
                st.session_state["mp_device"] = "auto"
            device = _widget(st.selectbox, "Device", "mp_device", options=devs)
            trust = _widget(st.checkbox, "trust_remote_code", "mp_trust",
                            help="Lets a hub model run its own Python code. Leave off unless you trust its author.")

    panel = ModelPanel(
        target_spec=_spec(choice, custom, demo), reference_spec=_spec(ref_choice, ref_custom, demo),
        dtype=dtype, quantize=quant, device=device, trust_remote_code=bool(trust),
    )
    if panel.target_spec is None:
        panel.target_error = "type a hub id, a local folder or a .gguf file for the target model"
    if ref_choice == "custom" and panel.reference_spec is None:
        panel.reference_error = "type a hub id, a local folder or a .gguf file for the reference model"
    panel.status = sb.empty()
    if load:
        panel.load(need_reference)
    else:
        panel.show_status()
    return panel


def _load_into(panel: ModelPanel, need_reference: bool) -> None:
    if panel.target_spec and panel.target_error is None:
        try:
            panel.target = load_with_progress(panel.target_spec, panel.dtype, panel.quantize, panel.device,
                                              panel.trust_remote_code, where=st.sidebar, label="Loading")
        except MiaError as e:
            panel.target_error = worded(e)
    if need_reference and panel.reference_spec and panel.reference_error is None:
        try:
            panel.reference = load_with_progress(panel.reference_spec, panel.dtype, "none", panel.device,
                                                 panel.trust_remote_code, where=st.sidebar, label="Loading reference")
        except MiaError as e:
            panel.reference_error = worded(e)
