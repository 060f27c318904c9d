"""Label Studio round trip against a real server (SurveyReview §4.3; slow suite): a Label Studio started by the
test (pip ``label-studio`` + ``label-studio-sdk`` in their own virtual environment, since they pin Django and
friends; SQLite in a temporary folder) gets our labeling config and the tasks with the LLM answer as predictions
through the SDK; two users annotate (one changes a label), the project is exported as JSON and read back with
``surveyalign.annotation.import_export``, and the agreement table counts the change.

The environment is cached in ``$SURVEYALIGN_CACHE/label-studio`` (default ``~/.cache/surveyalign``): the venv and
a migrated template database, so a run after the first skips the install and the migrations. Budgets (seconds,
environment): ``SURVEYALIGN_LS_INSTALL_S`` (default 180) for the install, ``SURVEYALIGN_LS_START_S`` (default 150)
for the server to answer; past a budget the test is skipped with the measured time as its reason.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

LS_PACKAGES = ("label-studio==1.23.2", "label-studio-sdk==2.1.2")
TOKEN = "surveyalign-test-token-0123456789"

DRIVER = r'''
import json, sys
from label_studio_sdk import LabelStudio
base_url, token, config_path, tasks_path, out_path = sys.argv[1:6]
client = LabelStudio(base_url=base_url, api_key=token)
me = client.users.whoami()
project = client.projects.create(title="surveyalign round trip", label_config=open(config_path).read())
client.projects.import_tasks(id=project.id, request=json.load(open(tasks_path)))
second = client.users.create(username="annotator-b", email="b@example.org", first_name="B")
changed = 0
for task in client.tasks.list(project=project.id):
    result = task.predictions[0].result if task.predictions else []
    client.annotations.create(id=task.id, result=result, completed_by=me.id)
    other = json.loads(json.dumps(result))
    for item in other:  # annotator b moves the first task's readability label
        if changed == 0 and item["type"] == "choices" and item["from_name"] == "readability":
            item["value"]["choices"] = ["-2"] if item["value"]["choices"] != ["-2"] else ["-1"]
            changed = 1
    client.annotations.create(id=task.id, result=other, completed_by=second.id)
data = b"".join(client.projects.exports.download_sync(id=project.id, export_type="JSON", download_all_tasks=True))
open(out_path, "wb").write(data)
print(json.dumps({"project": project.id, "users": [me.email, second.email], "changed": changed}))
'''


def _cache() -> Path:
    return Path(os.environ.get("SURVEYALIGN_CACHE", Path.home() / ".cache" / "surveyalign")) / "label-studio"


def _label_studio_venv() -> Path:
    venv = _cache() / "venv"
    python = venv / "bin" / "python"
    ready = venv / ".installed"
    if ready.exists():
        return python
    budget = float(os.environ.get("SURVEYALIGN_LS_INSTALL_S", "180"))
    start = time.monotonic()
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=budget)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *LS_PACKAGES], check=True,
                       timeout=max(1.0, budget - (time.monotonic() - start)), capture_output=True)
    except subprocess.TimeoutExpired:
        pytest.skip(f"installing {' '.join(LS_PACKAGES)} took more than SURVEYALIGN_LS_INSTALL_S={budget:g} s")
    except subprocess.CalledProcessError as err:
        pytest.skip(f"could not install {' '.join(LS_PACKAGES)} (no package index?): "
                    f"{(err.stderr or b'').decode(errors='replace').strip().splitlines()[-1:]}")
    ready.write_text(f"{time.monotonic() - start:.0f} s\n")
    return python


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def label_studio(tmp_path):
    """A Label Studio server on 127.0.0.1 with SQLite in ``tmp_path``; yields ``(python of its venv, base URL)``."""
    python = _label_studio_venv()
    data = tmp_path / "ls-data"
    data.mkdir()
    template = _cache() / "template.sqlite3"
    if template.exists():  # migrations already applied once: start from the migrated database
        shutil.copy(template, data / "label_studio.sqlite3")
    port = _free_port()
    env = {**os.environ, "LABEL_STUDIO_BASE_DATA_DIR": str(data), "DJANGO_DB": "sqlite",
           "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "false"}
    log = (tmp_path / "ls.log").open("w")
    server = subprocess.Popen([str(python.parent / "label-studio"), "start", "--no-browser", "--port", str(port),
                               "--data-dir", str(data), "--username", "a@example.org", "--password", "secret-pass-1",
                               "--user-token", TOKEN, "--enable-legacy-api-token"],
                              env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    budget = float(os.environ.get("SURVEYALIGN_LS_START_S", "150"))
    start = time.monotonic()
    url = f"http://127.0.0.1:{port}"
    import httpx

    try:
        while True:
            if server.poll() is not None:
                pytest.fail(f"Label Studio exited with {server.returncode}: "
                            f"{(tmp_path / 'ls.log').read_text()[-2000:]}")
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() - start > budget:
                pytest.skip(f"Label Studio did not answer within SURVEYALIGN_LS_START_S={budget:g} s "
                            f"(a loaded machine; the first start also migrates its database)")
            time.sleep(2)
        if not template.exists():
            shutil.copy(data / "label_studio.sqlite3", template)
        yield python, url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def test_round_trip_through_a_real_label_studio(label_studio, tmp_path):
    from surveyalign.annotation import (
        ReviewRecord,
        agreement_table,
        export_tasks,
        import_export,
        labeling_config,
        pair_labels,
        unit_labels,
    )

    python, url = label_studio
    text = ("The prose is hard to read in the methods part. The structure is clear and well motivated. "
            "Important recent studies are missing from the reference list.")
    reviews = [ReviewRecord(f"f1000-1-1-r{k}", "f1000-1", "f1000", text) for k in (1, 2)]
    spans = {"hard to read": "readability", "The structure is clear": "structure"}
    llm = [{"review_id": r.review_id, "dimensions": {
        "readability": {"label": -1, "snippets": []}, "structure": {"label": 1, "snippets": []},
        "comprehensiveness": {"label": -1, "snippets": []}, "criticalness": {"label": 0, "snippets": []}}}
        for r in reviews]
    for rec in llm:
        for phrase, dim in spans.items():
            at = text.index(phrase)
            rec["dimensions"][dim]["snippets"].append({"text": phrase, "status": "exact", "start": at,
                                                       "end": at + len(phrase), "score": 100.0, "verbatim": True})
    (tmp_path / "config.xml").write_text(labeling_config())
    (tmp_path / "tasks.json").write_text(json.dumps(export_tasks(reviews, llm)))
    (tmp_path / "driver.py").write_text(DRIVER)
    done = subprocess.run([str(python), str(tmp_path / "driver.py"), url, TOKEN, str(tmp_path / "config.xml"),
                           str(tmp_path / "tasks.json"), str(tmp_path / "export.json")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    info = json.loads(done.stdout.strip().splitlines()[-1])
    assert info["changed"] == 1
    records, report = import_export(tmp_path / "export.json")
    assert report["tasks"] == 2 and report["annotations"] == 4 and report["bad_spans"] == 0
    assert len(report["annotators"]) == 2 and report["dimensions_without_choice"] == 0
    first = next(r for r in records if r["review_id"] == "f1000-1-1-r1")
    assert first["dimensions"]["readability"]["snippets"][0] == {
        "text": "hard to read", "start": 13, "end": 25, "status": "exact", "score": 100.0, "verbatim": True}
    labels = unit_labels(records)
    annotators = sorted({a for v in labels.values() for a in v})
    a = {u: v[annotators[0]] for u, v in labels.items()}
    b = {u: v[annotators[1]] for u, v in labels.items()}
    table = agreement_table(pair_labels(a, b), n_boot=0)
    assert (table["rows"]["overall"]["units"], table["rows"]["overall"]["disagreements"]) == (8, 1)
    assert table["rows"]["readability"]["distance"]["one_level"] == 1
