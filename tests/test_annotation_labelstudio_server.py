"""Label Studio round trip against a real server (SurveyReview §4.3; slow suite): a Label Studio started by the
test (pip ``label-studio`` + ``label-studio-sdk`` in their own virtual environment, since they pin Django and
friends; SQLite in a temporary folder) gets our labeling config and the tasks with the LLM answer as predictions
through the SDK; two users annotate (one changes a label), the project is exported as JSON and read back with
``surveyalign.annotation.import_export``, and the agreement table counts the change.

The environment (tests/labelstudio_env.py) is cached in ``$SURVEYALIGN_CACHE/label-studio`` (default
``~/.cache/surveyalign``): the venv and a migrated template database. In CI (``.ci/run`` with CI=true) a background
job prepares both from the start of the run, and this test (marked ``late``) runs after every other test and waits
for that job. Budgets (seconds, environment): ``SURVEYALIGN_LS_INSTALL_S`` (default 300) for the install,
``SURVEYALIGN_LS_START_S`` (default 150) for the server to answer, their sum for waiting on a background
preparation. Measured on the 2-core development machine (nice -n 10, no pip cache): install 153 s at load 4 and
248 s at load 8-10; first start with migrations 58 s and 91 s; a start from the template 12-15 s; the round trip
11 s. Past a budget, or without a package index, the test is skipped and the reason says which and how long.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from labelstudio_env import (
    TOKEN,
    NotReady,
    budget,
    install,
    prepare_lock,
    save_template,
    start,
    stop,
    wait_healthy,
)

pytestmark = [pytest.mark.slow, pytest.mark.late]

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


@pytest.fixture
def label_studio(tmp_path):
    """A Label Studio server on 127.0.0.1 with SQLite in ``tmp_path``; yields ``(python of its venv, base URL)``."""
    install_s, start_s = budget("SURVEYALIGN_LS_INSTALL_S", 300), budget("SURVEYALIGN_LS_START_S", 150)
    try:
        with prepare_lock(wait_s=install_s + start_s):  # a background preparation (.ci/run) finishes first
            python = install(sys.executable, install_s)
    except NotReady as exc:
        pytest.skip(str(exc))
    data, log = tmp_path / "ls-data", tmp_path / "ls.log"
    server, url = start(python, data, log)
    try:
        try:
            wait_healthy(server, url, start_s, log)
        except NotReady as exc:
            pytest.skip(str(exc))
        except RuntimeError as exc:
            pytest.fail(str(exc))
        save_template(data)
        yield python, url
    finally:
        stop(server)


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
