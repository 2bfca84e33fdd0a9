"""Pushing to the Hugging Face Hub: tokens, access checks with one-line errors, folder pushes, and the
trainers' ``--push_to_hub`` (held, then pushed through the manifest)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from rirag.hub.assemble import Row, _copy, gitattributes, upload_files, with_hub_base_model
from rirag.hub.manifest import PROJECT_MANIFEST, Entry, Manifest, load_manifest
from rirag.io import atomic_write_text

logger = logging.getLogger(__name__)


class HubAccessError(OSError):
    """The Hub cannot be used from here: no network, offline mode, or a server error. The message is one line."""


class HubTokenError(HubAccessError, PermissionError):
    """No Hugging Face token, or one the Hub rejects."""


NO_TOKEN = "no Hugging Face token: set HF_TOKEN or run `hf auth login`"


def hold_trainer_push(training_args: object) -> tuple[str, str] | None:
    """Turn a transformers / sentence-transformers Trainer's own Hub pushes off and say what to push instead.

    With ``push_to_hub`` a Trainer pushes every checkpoint and, on ``save_model`` / ``push_to_hub``, writes the
    library's generated README.md over the typed card. A trainer calls this before building its Trainer and, once
    its typed card is saved, :func:`push_trained` with what it returned: ``(output_dir, hub_model_id or the
    folder's name)``, None when no push was asked."""
    if not getattr(training_args, "push_to_hub", False):
        return None
    training_args.push_to_hub = False
    folder = str(training_args.output_dir)
    return folder, getattr(training_args, "hub_model_id", None) or Path(os.path.normpath(folder)).name


def push_trained(target: tuple[str, str] | None, manifest: str | Path = PROJECT_MANIFEST) -> str | None:
    """Push a trainer's saved folder (its typed card included) through :func:`push_folder`, as hub_push would: a
    copy without checkpoints, trainer states or card data (:data:`~rirag.hub.assemble.EXCLUDE`), with LFS rules, and
    any config naming a local base model (``adapter_config.json``) naming the Hub id the project manifest gives it."""
    import tempfile

    if target is None or not is_main_process():
        return None
    folder, repo_id = target
    plan = load_manifest(manifest) if Path(manifest).is_file() else Manifest(namespace="-", entries=[])
    with tempfile.TemporaryDirectory(prefix="rirag-push-") as tmp:
        copy = Path(tmp) / Path(folder).name
        for rel in upload_files(Path(folder)):
            _copy(Path(folder) / rel, copy / rel)
        with_hub_base_model(copy, Entry(name=repo_id, kind="model", repo=repo_id, source=folder), plan)
        attributes = gitattributes(copy)
        if attributes:
            atomic_write_text(copy / ".gitattributes", attributes)
        return push_folder(copy, repo_id)


def is_main_process() -> bool:
    """False on every process but the first under ``accelerate launch`` / torchrun (they set RANK)."""
    return int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) or 0) == 0


def hub_token(token: str | None = None) -> str:
    """``token``, else ``HF_TOKEN`` or the one ``hf auth login`` saved; HubTokenError when there is none."""
    from huggingface_hub import get_token

    token = token or get_token()
    if not token:
        raise HubTokenError(NO_TOKEN)
    return token


def access_error(err: BaseException, doing: str) -> HubAccessError | None:
    """The one-line HubAccessError for an exception raised while talking to the Hub; None when it is something else
    (a bug, a bad folder), which is left to propagate."""
    from huggingface_hub import errors

    if isinstance(err, HubAccessError):
        return err
    if isinstance(err, errors.OfflineModeIsEnabled):
        return HubAccessError(f"cannot {doing}: HF_HUB_OFFLINE is set (the Makefile sets it for everything but "
                              "`make publish DRY_RUN=0`); unset it or set HF_HUB_OFFLINE=0")
    if isinstance(err, errors.HfHubHTTPError):
        status = getattr(getattr(err, "response", None), "status_code", None)
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if status in (401, 403):
            return HubTokenError(f"cannot {doing}: the Hub refused the token (HTTP {status}); check HF_TOKEN or run "
                                 "`hf auth login` with a token that can write")
        return HubAccessError(f"cannot {doing}: the Hub answered HTTP {status}: {first}")
    transport = tuple(t for t in (getattr(errors, "HTTPError", None),) if isinstance(t, type))
    try:
        import requests

        transport += (requests.RequestException,)
    except ImportError:
        pass
    if isinstance(err, transport + (ConnectionError, TimeoutError)):
        reason = " ".join(str(err).split()) or type(err).__name__
        return HubAccessError(f"cannot {doing}: the Hub cannot be reached ({reason}); check the network "
                              "(and HF_ENDPOINT if set)")
    return None


def check_hub_access(token: str | None = None) -> str:
    """The user name the token belongs to; HubTokenError / HubAccessError (one line) when pushing cannot work."""
    from huggingface_hub import HfApi

    token = hub_token(token)
    try:
        info = HfApi(token=token).whoami()
    except Exception as err:
        mapped = access_error(err, "check the Hugging Face token")
        if mapped is None:
            raise
        raise mapped from err
    return str(info.get("name", "?")) if isinstance(info, dict) else "?"


def push_folder(folder: str | Path, repo_id: str, repo_type: str = "model", *, private: bool | None = None,
                create_pr: bool = False, commit_message: str | None = None, token: str | None = None,
                space_sdk: str | None = None, space_variables: dict | None = None,
                path_in_repo: str | None = None, files: list[str] | tuple[str, ...] | None = None) -> str | None:
    """Create the repo if needed and upload ``folder``; the only place rirag talks to the Hub.

    Returns the commit (or pull-request) URL; None on a non-main process. The token comes from ``token``,
    ``HF_TOKEN`` or ``hf auth login``. ``files`` (relative paths): upload those and nothing else of the folder (what
    was assembled; a file written there since, a cache, is left behind).
    """
    import glob

    from huggingface_hub import HfApi

    if not is_main_process():
        logger.info("not the main process: %s is pushed by rank 0", repo_id)
        return None
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"nothing to push: {folder} is not a folder")
    token = hub_token(token)
    api = HfApi(token=token)
    if repo_type == "space" and space_sdk is None:
        space_sdk = "gradio"
    extra = {}
    if repo_type == "space" and space_variables:  # set when the Space is created (an existing one keeps its own)
        extra["space_variables"] = [{"key": k, "value": str(v)} for k, v in space_variables.items()]
    try:
        api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True, space_sdk=space_sdk, **extra)
        allow = [glob.escape(f) for f in files] if files is not None else None
        info = api.upload_folder(repo_id=repo_id, folder_path=str(folder), repo_type=repo_type,
                                 path_in_repo=path_in_repo, create_pr=create_pr, allow_patterns=allow,
                                 commit_message=commit_message or f"rirag: upload {folder.name}")
    except Exception as err:
        mapped = access_error(err, f"push {repo_id}")
        if mapped is None:
            raise
        raise mapped from err
    url = getattr(info, "pr_url", None) or getattr(info, "commit_url", None) or str(info)
    logger.info("pushed %s to %s (%s): %s", folder, repo_id, repo_type, url)
    return url


def unlisted_files(folder: Path, paths: tuple[str, ...]) -> list[str]:
    """The files of an upload folder that its assembly did not write (relative paths, sorted)."""
    listed = set(paths)
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and p.relative_to(folder).as_posix() not in listed)


def push_all(manifest: Manifest, rows: list[Row], *, private: bool | None = None,
             create_pr: bool | None = None) -> list[Row]:
    """Push every assembled row whose card parses and that loads as its card says (when checked); missing or broken
    ones are left as they are. A HubAccessError stops the push and names what was already pushed."""
    entries = {e.name: e for e in manifest.entries}
    ids = {e.name: manifest.repo_id(e) for e in manifest.entries}  # a Space variable may name another entry
    for row in rows:
        if row.status != "assembled":
            continue
        if row.card != "ok":
            row.detail = f"not pushed: card {row.card}"
            continue
        if row.load.startswith("failed"):
            row.detail = f"not pushed: it does not load as its card says ({row.load})"
            continue
        entry = entries[row.name]
        extra = unlisted_files(Path(row.folder), row.paths)
        if extra:
            logger.warning("%s: %d file(s) in %s were not assembled and are not uploaded: %s", entry.name,
                           len(extra), row.folder, ", ".join(extra[:5]))
        variables = {k: ids.get(v, v) for k, v in entry.space_variables.items()}
        try:
            row.detail = push_folder(row.folder, row.repo_id, entry.repo_type, space_variables=variables or None,
                                     private=manifest.private if private is None else private,
                                     create_pr=manifest.create_pr if create_pr is None else create_pr,
                                     commit_message=f"rirag hub_push: {entry.name}", files=row.paths) or ""
        except HubAccessError as err:
            done = [r.repo_id for r in rows if r.status == "pushed"]
            raise type(err)(f"{err} (pushed before this: {', '.join(done) if done else 'nothing'})") from err
        row.status = "pushed"
    return rows

