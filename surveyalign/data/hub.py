"""Publish a built SurveyReview folder to the Hugging Face Hub (``huggingface_hub.HfApi.upload_folder``)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

_REPO_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def check_dataset_folder(path: str | os.PathLike) -> list[str]:
    """Validate a folder before upload and list the files that would be pushed.

    Args:
        path: folder written by :func:`surveyalign.data.build_dataset`.

    Returns:
        Relative POSIX paths of every file, sorted.

    Raises:
        FileNotFoundError: the folder, its README.md, its build_report.json or its data files are missing.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder")
    for required in ("README.md", "build_report.json"):
        if not (folder / required).is_file():
            raise FileNotFoundError(f"{folder} has no {required}; build it with `surveyalign data build`")
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    if not any(f.startswith("data/") for f in files):
        raise FileNotFoundError(f"{folder} has no data files under data/")
    return files


def push_dataset(
    path: str | os.PathLike,
    repo_id: str,
    *,
    private: bool = False,
    token_env: str = "HF_TOKEN",
    dry_run: bool = False,
    commit_message: str = "Upload SurveyReview built with surveyalign",
) -> dict[str, Any]:
    """Create (if needed) the dataset repo ``repo_id`` and upload the folder to it.

    Args:
        path: built dataset folder.
        repo_id: "ORG/NAME" on the Hub.
        private: create the repo as private (only when it does not exist yet).
        token_env: environment variable holding the access token (never logged).
        dry_run: validate and list the files; contact nothing.
        commit_message: commit message on the Hub.

    Returns:
        ``{"repo_id", "files", "dry_run", "commit_url" (None on a dry run)}``.

    Raises:
        ValueError: malformed ``repo_id``.
        FileNotFoundError: see :func:`check_dataset_folder`.
        RuntimeError: no token in ``token_env`` (real push only).
    """
    if not _REPO_ID_RE.match(repo_id or ""):
        raise ValueError(f"--repo-id must look like ORG/NAME, got {repo_id!r}")
    files = check_dataset_folder(path)
    result: dict[str, Any] = {"repo_id": repo_id, "files": files, "dry_run": dry_run, "commit_url": None}
    if dry_run:
        return result
    token = os.environ.get(token_env)
    if not token:
        raise RuntimeError(f"no Hugging Face token in ${token_env}; export it or pass --token-env NAME")
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    info = api.upload_folder(
        repo_id=repo_id, folder_path=str(path), repo_type="dataset", commit_message=commit_message
    )
    result["commit_url"] = getattr(info, "commit_url", str(info))
    return result
