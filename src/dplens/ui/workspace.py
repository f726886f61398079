"""The session's workspace: restored from and saved to the store under the id in the URL (``?ws=...``).

``open_workspace`` (app.py, before the sidebar) restores the working set named by ``st.query_params``
once per session when it is the curator's own (``ui.identity``), or starts a new workspace under an id
the server mints; it keeps the id in the URL so that reload and Back reopen it. An unknown id, or one
another curator owns, is never adopted: it starts a new workspace. ``save_workspace`` (app.py, after the
page) writes the working set when it changed. A new tab without the id gets a new workspace; the budget
is the curator's ledger for the dataset either way. The id appears only in the URL, never on a page.
"""

from __future__ import annotations

import json

import streamlit as st

from dplens.core.mechanisms import MECHANISMS, RENAMED
from dplens.core.release.config import build_recipe, check_recipe
from dplens.core.release.workspace_store import WorkspaceStore, release_from_dict, release_to_dict
from dplens.ui.datasets import histogram
from dplens.ui.identity import current_curator
from dplens.ui.state import init_state

# Plain session keys a reload brings back (widget keys are set before their widgets are drawn).
_PLAIN_KEYS = ("dataset_key", "seed", "workload_spec", "release_counter", "release_mechanism", "release_epsilon",
              "release_noise_path", "compare_mechanisms", "ledger_parents")


def _store() -> WorkspaceStore:
    """The session curator's workspaces and uploads (the owner bound when the workspace was opened)."""
    return WorkspaceStore(owner=st.session_state.workspace_owner)


def _state() -> dict:
    """The working set, with the releases by number only (their records are added when saving)."""
    ss = st.session_state
    uploads = {}
    for key, hist in ss.uploads.items():
        if key not in ss.workspace_datasets:  # each upload's counts are stored once
            ss.workspace_datasets[key] = _store().put_dataset(hist)
        uploads[key] = ss.workspace_datasets[key]
    spec = ss.workload_spec
    recipe = ss.custom_recipes.get(spec) if spec and spec.startswith("custom:") else None
    return {"uploads": uploads, "releases": ss.releases, "release_numbers": sorted(ss.release_outputs),
            "custom_recipe": recipe if isinstance(recipe, dict) else None,
            **{key: ss[key] for key in _PLAIN_KEYS if key in ss}}


def _release_records() -> dict[str, dict]:
    """Each release's stored record; releases never change, so each is serialised once per session."""
    ss, records = st.session_state, st.session_state.workspace_release_docs
    for number, output in ss.release_outputs.items():
        if number not in records:
            records[number] = {"release": release_to_dict(output["release"]),
                               "settings": {k: str(v) for k, v in output["settings"].items()},
                               "seconds": float(output["seconds"])}
    return {str(n): records[n] for n in ss.release_outputs}


def save_workspace() -> None:
    """Write the working set under the session's workspace id when it changed (never raises)."""
    ss = st.session_state
    if "workspace_id" not in ss or "workspace_owner" not in ss:
        return
    try:
        state = _state()
        signature = json.dumps(state, sort_keys=True, allow_nan=False, default=str)  # cheap: no released values
        if signature != ss.get("workspace_saved"):
            _store().save(ss.workspace_id, {**json.loads(signature), "release_outputs": _release_records()})
            ss.workspace_saved = signature
    except (ValueError, TypeError) as err:  # a store problem must not break the page
        ss.flash_error = f"Workspace not saved: {str(err).splitlines()[0]}"


def _restore(state: dict) -> None:
    ss, store = st.session_state, _store()
    for key, reference in state.get("uploads", {}).items():
        hist = store.get_dataset(reference)
        if hist is not None:
            ss.uploads[key] = hist
            ss.workspace_datasets[key] = reference
    for key in _PLAIN_KEYS:
        if key in state:
            ss[key] = state[key]
    # Widget values must be among today's options: a former name is read as today's (RENAMED), others dropped.
    if "compare_mechanisms" in state:
        renamed = [RENAMED.get(m, m) for m in state["compare_mechanisms"]]
        ss.compare_mechanisms = [m for m in renamed if m in MECHANISMS]
    if "release_mechanism" in state:
        ss.release_mechanism = RENAMED.get(state["release_mechanism"], state["release_mechanism"])
        if ss.release_mechanism not in MECHANISMS:
            ss.pop("release_mechanism", None)
    ss.releases = list(state.get("releases", []))
    for number, output in state.get("release_outputs", {}).items():
        ss.release_outputs[int(number)] = {**output, "release": release_from_dict(output["release"])}
        ss.workspace_release_docs[int(number)] = output
    spec, recipe = ss.workload_spec, state.get("custom_recipe")
    if spec and spec.startswith("custom:"):
        try:
            ss.custom_workloads[spec] = build_recipe(check_recipe(recipe), histogram().domain.shape)
            ss.custom_recipes[spec] = recipe
        except (TypeError, ValueError, KeyError, StopIteration, AttributeError):
            ss.workload_spec = None  # the dataset's default workload


def open_workspace() -> str:
    """Restore (first run of a session) the curator's workspace named in the URL, or start a new one under a
    server-minted id; keep its id in the URL. Another curator's id, or an unknown one, starts a new workspace."""
    curator = current_curator()  # in shared mode: sign-in first (stops the page until then)
    ss = st.session_state
    if ss.get("workspace_owner", curator) != curator:  # another curator in this session: nothing carries over
        for key in list(ss.keys()):
            del ss[key]
    init_state()
    ss.setdefault("workspace_datasets", {})       # upload key -> its stored reference (owner's uploads)
    ss.setdefault("workspace_release_docs", {})   # release number -> its stored record
    if "workspace_id" not in ss:
        ss.workspace_owner = curator
        store, wanted = _store(), st.query_params.get("ws")
        try:
            state = None if wanted is None else store.load(wanted)
            ss.workspace_id = wanted if state is not None else store.create()
        except ValueError as err:
            ss.flash_error = f"Workspace not restored: {err}"
            state = None
        if state is not None:
            _restore(state)
    if "workspace_id" not in ss:  # the store cannot be opened: no workspace (nothing saved)
        return ""
    if st.query_params.get("ws") != ss.workspace_id:
        st.query_params["ws"] = ss.workspace_id
    return ss.workspace_id
