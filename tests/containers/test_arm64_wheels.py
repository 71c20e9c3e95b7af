"""Every package the images install has a wheel for the Raspberry Pi 5 (linux aarch64)."""

from __future__ import annotations

import tomllib

from containers.stack import ROOT
from containers.wheel_tags import missing_wheels, runtime_packages, wheel_fits


def lock() -> dict[str, object]:
    with (ROOT / "uv.lock").open("rb") as file:
        return tomllib.load(file)


def test_every_locked_runtime_package_has_a_wheel_for_linux_aarch64() -> None:
    assert missing_wheels(lock(), "aarch64") == []


def test_the_check_covers_the_compiled_packages_the_images_need() -> None:
    names = {package["name"] for package in runtime_packages(lock(), "aarch64")}
    assert {"pydantic-core", "httptools", "cryptography"} <= names
    assert "pytest" not in names  # dev tools never reach an image


def test_a_package_with_only_x86_64_wheels_is_named() -> None:
    synthetic = {
        "package": [
            {"name": "app", "version": "1", "source": {"editable": "app"},
             "dependencies": [{"name": "fastthing"}, {"name": "winonly",
                                                      "marker": "sys_platform == 'win32'"}]},
            {"name": "fastthing", "version": "2.0", "source": {"registry": "pypi"},
             "wheels": [{"url": "x/fastthing-2.0-cp311-cp311-manylinux_2_17_x86_64.whl"}]},
            {"name": "winonly", "version": "1", "source": {"registry": "pypi"}, "wheels": []},
        ]
    }  # fmt: skip
    assert missing_wheels(synthetic, "aarch64") == ["fastthing==2.0"]
    assert missing_wheels(synthetic, "x86_64") == []


def test_wheel_tags_are_read_as_pip_reads_them() -> None:
    assert wheel_fits("a-1-py3-none-any.whl", "aarch64")
    assert wheel_fits("a-1-cp39-abi3-manylinux_2_28_aarch64.whl", "aarch64")
    assert wheel_fits("a-1-cp311-cp311-manylinux2014_aarch64.manylinux_2_17_aarch64.whl", "aarch64")
    assert not wheel_fits("a-1-cp311-cp311-musllinux_1_2_aarch64.whl", "aarch64")
    assert not wheel_fits("a-1-cp312-cp312-manylinux_2_17_aarch64.whl", "aarch64")
    assert not wheel_fits("a-1-cp311-cp311-manylinux_2_39_aarch64.whl", "aarch64")
