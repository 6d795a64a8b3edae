"""_node/dev_char: the /dev/char links runc needs for NVIDIA's device nodes (nvidia-container-toolkit#48)."""

import os
import stat

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node import dev_char as dc


@pytest.fixture
def dev(tmp_path):
    root = tmp_path / "dev"
    (root / "nvidia-caps").mkdir(parents=True)
    try:
        for name, minor in (("nvidia0", 0), ("nvidia1", 1), ("nvidiactl", 255)):
            os.mknod(root / name, 0o666 | stat.S_IFCHR, os.makedev(195, minor))
        os.mknod(root / "nvidia-caps" / "nvidia-cap1", 0o400 | stat.S_IFCHR, os.makedev(237, 1))
        os.mknod(root / "sda", 0o660 | stat.S_IFBLK, os.makedev(8, 0))
    except PermissionError:
        pytest.skip("mknod not permitted: would check /dev/char/195:N links for the NVIDIA nodes")
    (root / "nvidia-not-a-device").write_text("")
    return root


def test_links_for_every_nvidia_char_device_and_only_those(dev, tmp_path):
    chars = tmp_path / "dev" / "char"
    assert dc.ensure_links(str(dev), str(chars), check_mode=True) == [
        f"{chars}/195:0", f"{chars}/195:1", f"{chars}/195:255", f"{chars}/237:1"]  # fmt: skip
    assert not chars.exists()  # check mode makes nothing
    made = dc.ensure_links(str(dev), str(chars))
    assert len(made) == 4
    assert os.readlink(chars / "195:0") == "../nvidia0"
    assert os.readlink(chars / "237:1") == "../nvidia-caps/nvidia-cap1"
    assert dc.ensure_links(str(dev), str(chars)) == []  # idempotent


def test_a_stale_link_is_replaced(dev, tmp_path):
    chars = tmp_path / "dev" / "char"
    chars.mkdir()
    (chars / "195:0").symlink_to("../somewhere-else")
    assert f"{chars}/195:0" in dc.ensure_links(str(dev), str(chars))
    assert os.readlink(chars / "195:0") == "../nvidia0"


def test_the_udev_rule_is_nvidias():
    assert 'DEVPATH=="/bus/pci/drivers/nvidia"' in dc.UDEV_RULE
    assert 'RUN+="/usr/bin/nvidia-ctk system create-dev-char-symlinks --create-all"' in dc.UDEV_RULE
