"""The kernel-module source the mirror's DKMS packages ship: small, real C modules that DKMS builds against a real
kernel's headers, laid out and named as NVIDIA's nvidia-kernel(-open)-dkms packages lay out theirs.

What is real: the DKMS flow (dkms.conf shape, `make modules KERNEL_UNAME=...` from /usr/src/nvidia-<version>, the
module names nvidia, nvidia-uvm, nvidia-modeset, nvidia-drm and, for the open flavour, nvidia-peermem; the
dependency of the others on nvidia, which depmod records and modprobe follows), the build (Kbuild against
/lib/modules/<kernel>/build), the signing DKMS does, modinfo's fields (version, license, the taint a proprietary
licence brings), and what the module says when it loads on a machine without an NVIDIA GPU ("No NVIDIA GPU found",
-ENODEV, as modprobe reports "No such device"). What is stood in: the modules drive nothing. The broken version's
source fails to compile the way an NVIDIA release fails on a kernel whose API moved (an implicit declaration, an
error under the kernel's -Werror=implicit-function-declaration), so DKMS writes a real make.log.

Sources: NVIDIA's runfile kernel/dkms.conf template (PACKAGE_NAME="nvidia", AUTOINSTALL="yes", MAKE[0] with
KERNEL_UNAME=${kernelver} and `modules`, one BUILT_MODULE_NAME/DEST_MODULE_LOCATION pair per module that
nvidia-installer fills in); NVIDIA/open-gpu-kernel-modules (MODULE_LICENSE "Dual MIT/GPL", nvidia-peermem open only);
Debian's dkms 3.0.10 postinst-dkms/prerm-dkms autoscripts (dh_dkms), which the packages' maintainer scripts copy.
"""

from __future__ import annotations

SRC = "/usr/src/nvidia-{ver}"
MODULES = ["nvidia", "nvidia-uvm", "nvidia-modeset", "nvidia-drm"]
OPEN_ONLY = ["nvidia-peermem"]
LICENSE = {"open": "Dual MIT/GPL", "proprietary": "NVIDIA"}

# The string the real module prints when no GPU answers its PCI probe (as Debian's 535 build printed under qemu).
NO_GPU = "NVRM: No NVIDIA GPU found."

# NVIDIA's third-party P2P interface (kernel-open/nvidia/nv-p2p.h: the prototypes of nvidia_p2p_get_pages and
# nvidia_p2p_put_pages, which nvidia.ko exports), which GDRCopy's gdrdrv and nvidia-peermem build against.
P2P_H = r"""/* gpufleet.stack sandbox stand-in for NVIDIA's nv-p2p.h: the two calls GPUDirect clients link against, with
 * NVIDIA's prototypes. */
#ifndef _NV_P2P_H_
#define _NV_P2P_H_
#include <linux/types.h>

struct nvidia_p2p_page_table;

int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space,
        uint64_t virtual_address, uint64_t length,
        struct nvidia_p2p_page_table **page_table,
        void (*free_callback)(void *data), void *data);

int nvidia_p2p_put_pages(uint64_t p2p_token,
        uint32_t va_space, uint64_t virtual_address,
        struct nvidia_p2p_page_table *page_table);
#endif
"""

# The two exported P2P calls, stubbed: in the NVIDIA stand-in (as nv-p2p.c exports them) and in gdrdrv's dummy.
P2P_STUBS = r"""int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space, uint64_t virtual_address,
                         uint64_t length, struct nvidia_p2p_page_table **page_table,
                         void (*free_callback)(void *data), void *data)
{
    return -EINVAL;
}
EXPORT_SYMBOL(nvidia_p2p_get_pages);

int nvidia_p2p_put_pages(uint64_t p2p_token, uint32_t va_space, uint64_t virtual_address,
                         struct nvidia_p2p_page_table *page_table)
{
    return -EINVAL;
}
EXPORT_SYMBOL(nvidia_p2p_put_pages);
"""

CORE = r"""// SPDX-License-Identifier: MIT
/* gpufleet.stack sandbox stand-in for NVIDIA's nvidia.ko {ver} ({flavor}): it builds, signs and loads like the real
 * module and drives nothing. On a machine without an NVIDIA GPU it fails as the real one does. */
#include <linux/module.h>
#include <linux/pci.h>
#include "nv-p2p.h"

const char nv_sandbox_version[] = "{ver}";
EXPORT_SYMBOL(nv_sandbox_version);

/* The P2P calls the real module exports (nv-p2p.c): there is no GPU memory to pin here. */
{p2p}
static int __init nv_sandbox_init(void)
{{
    struct pci_dev *gpu = pci_get_device(PCI_VENDOR_ID_NVIDIA, PCI_ANY_ID, NULL);
{broken}
    pr_info("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {ver}  (gpufleet.stack sandbox stand-in)\n");
    if (!gpu) {{
        pr_err("{no_gpu}\n");
        return -ENODEV;
    }}
    pci_dev_put(gpu);
    pr_err("NVRM: the gpufleet.stack stand-in module drives no GPU\n");
    return -ENODEV;
}}

static void __exit nv_sandbox_exit(void)
{{
}}

module_init(nv_sandbox_init);
module_exit(nv_sandbox_exit);
MODULE_LICENSE("{license}");
MODULE_VERSION("{ver}");
MODULE_DESCRIPTION("gpufleet.stack sandbox stand-in for the NVIDIA kernel module");
"""

# The others need nvidia (its exported symbol), so depmod lists it as their dependency, as for the real modules.
PART = r"""// SPDX-License-Identifier: MIT
/* gpufleet.stack sandbox stand-in for NVIDIA's {name}.ko {ver}. */
#include <linux/module.h>

extern const char nv_sandbox_version[];

static int __init part_init(void)
{{
    pr_info("{name}: loaded for nvidia %s\n", nv_sandbox_version);
    return 0;
}}

static void __exit part_exit(void)
{{
}}

module_init(part_init);
module_exit(part_exit);
MODULE_LICENSE("{license}");
MODULE_VERSION("{ver}");
"""

# A release that does not build on this kernel: the way they really break (a kernel API that moved).
BROKEN = "\tnv_sandbox_vm_flags_set_legacy(gpu);  /* gone from this kernel: does not compile */"

MAKEFILE = """# Kbuild for the gpufleet.stack stand-in modules; DKMS runs `make modules KERNEL_UNAME=<kernel>` here.
ifneq ($(KERNELRELEASE),)
obj-m := {objects}
else
KERNEL_UNAME ?= $(shell uname -r)
KERNEL_SOURCES := /lib/modules/$(KERNEL_UNAME)/build

modules:
\t$(MAKE) -C $(KERNEL_SOURCES) M=$(CURDIR) modules

clean:
\t$(MAKE) -C $(KERNEL_SOURCES) M=$(CURDIR) clean
endif
"""

DKMS_CONF = """PACKAGE_NAME="nvidia"
PACKAGE_VERSION="{ver}"
AUTOINSTALL="yes"

# By default DKMS adds KERNELRELEASE to make's command line, which would make the build believe Kbuild called it
# directly; NVIDIA's template passes the kernel as KERNEL_UNAME and asks for `modules` instead.
MAKE[0]="'make' ${{parallel_jobs+-j$parallel_jobs}} NV_EXCLUDE_BUILD_MODULES='' KERNEL_UNAME=${{kernelver}} modules"

{modules}"""


def module_names(flavor):
    return MODULES + (OPEN_ONLY if flavor == "open" else [])


def dkms_conf(ver, flavor):
    pairs = "".join(
        f'BUILT_MODULE_NAME[{i}]="{name}"\nDEST_MODULE_LOCATION[{i}]="/kernel/drivers/video"\n'
        for i, name in enumerate(module_names(flavor))
    )
    return DKMS_CONF.format(ver=ver, modules=pairs)


def source_files(ver, flavor, broken=False):
    """path -> (text, mode): the tree under /usr/src/nvidia-<ver> that `dkms add` registers."""
    base = SRC.format(ver=ver)
    names = module_names(flavor)
    files = {
        f"{base}/dkms.conf": dkms_conf(ver, flavor),
        f"{base}/Makefile": MAKEFILE.format(objects=" ".join(f"{n}.o" for n in names)),
        f"{base}/nvidia.c": CORE.format(
            ver=ver,
            flavor=flavor,
            license=LICENSE[flavor],
            no_gpu=NO_GPU,
            broken=BROKEN if broken else "",
            p2p=P2P_STUBS,
        ),
    }
    files[f"{base}/nv-p2p.h"] = P2P_H
    for name in names[1:]:
        files[f"{base}/{name}.c"] = PART.format(name=name, ver=ver, license=LICENSE[flavor])
    return {path: (text, 0o644) for path, text in files.items()}


# --- GDRCopy's gdrdrv (NVIDIA/gdrcopy packages/dkms.conf, src/gdrdrv/Makefile) ------------------------------------
# Its DKMS tree as gdrcopy's gdrdrv-dkms lays it out; the build looks for the NVIDIA driver's source under
# /usr/src/nvidia-* (the real Makefile finds nv-p2p.c there; this one nv-p2p.h, which Debian's tree and the
# mirror's both have) and, like the real one, builds nv-p2p-dummy beside gdrdrv so that modpost knows the P2P
# symbols; only gdrdrv is installed, and depmod then finds them in the installed nvidia module.
GDRDRV_SRC = "/usr/src/gdrdrv-{ver}"

GDRDRV_DKMS_CONF = """PACKAGE_NAME="gdrdrv"
PACKAGE_VERSION="{ver}"
BUILT_MODULE_NAME[0]="gdrdrv"
DEST_MODULE_LOCATION[0]="/kernel/drivers/misc/"
AUTOINSTALL="yes"
MAKE[0]="cd $dkms_tree/gdrdrv/{ver}/build && make CONF_SCRIPT_DIR=scripts KVER=$kernelver"
"""

GDRDRV_MAKEFILE = """# Kbuild for the gpufleet.stack stand-in of GDRCopy's gdrdrv; DKMS runs `make KVER=<kernel>` here.
ifneq ($(KERNELRELEASE),)
obj-m := nv-p2p-dummy.o gdrdrv.o
ccflags-y += -I$(NVIDIA_SRC_DIR)
else
KVER ?= $(shell uname -r)
NV_P2P_H := $(shell find /usr/src/nvidia-* -name nv-p2p.h -print -quit 2>/dev/null)
export NVIDIA_SRC_DIR ?= $(if $(NV_P2P_H),$(patsubst %/,%,$(dir $(NV_P2P_H))),NVIDIA_DRIVER_MISSING)

all:
\t@test -f $(NVIDIA_SRC_DIR)/nv-p2p.h || {{ echo "gdrdrv: no NVIDIA driver source with nv-p2p.h under" \\
\t\t"/usr/src/nvidia-*: install the driver's DKMS package first" >&2; exit 1; }}
\t$(MAKE) -C /lib/modules/$(KVER)/build M=$(CURDIR) modules

clean:
\t$(MAKE) -C /lib/modules/$(KVER)/build M=$(CURDIR) clean
endif
"""

GDRDRV_C = r"""// SPDX-License-Identifier: MIT
/* gpufleet.stack sandbox stand-in for GDRCopy's gdrdrv {ver}: a character device "gdrdrv" (the init script makes
 * /dev/gdrdrv from its major in /proc/devices) that needs the NVIDIA module's P2P calls, as the real one does. */
#include <linux/module.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pci.h>
#include "nv-p2p.h"

static int gdrdrv_major;
static const struct file_operations gdrdrv_fops = {{ .owner = THIS_MODULE }};

static int __init gdrdrv_init(void)
{{
    gdrdrv_major = register_chrdev(0, "gdrdrv", &gdrdrv_fops);
    if (gdrdrv_major < 0)
        return gdrdrv_major;
    pr_info("gdrdrv: loaded (gpufleet.stack stand-in for {ver}), P2P through %ps\n", nvidia_p2p_get_pages);
    return 0;
}}

static void __exit gdrdrv_exit(void)
{{
    unregister_chrdev(gdrdrv_major, "gdrdrv");
}}

module_init(gdrdrv_init);
module_exit(gdrdrv_exit);
MODULE_LICENSE("Dual MIT/GPL");
MODULE_VERSION("{ver}");
MODULE_DESCRIPTION("gpufleet.stack sandbox stand-in for GDRCopy's gdrdrv");
"""

GDRDRV_DUMMY_C = r"""// SPDX-License-Identifier: MIT
/* Built, never installed: gives modpost the NVIDIA P2P symbols gdrdrv needs (as GDRCopy's nv-p2p-dummy does). */
#include <linux/module.h>
#include <linux/mm.h>
#include <linux/pci.h>
#include "nv-p2p.h"

{p2p}
MODULE_LICENSE("MIT");
MODULE_DESCRIPTION("P2P dummy (gpufleet.stack stand-in)");
"""

# gdrcopy's packages/dkms/debian/postinst runs Debian's common.postinst for gdrdrv; dh_dkms' prerm removes it.
GDRDRV_POSTINST = """if [ "$1" = configure ]; then
    /usr/lib/dkms/common.postinst gdrdrv {ver} /usr/share/gdrdrv-dkms "" "$2"
fi
"""
GDRDRV_PRERM = """case "$1" in
    remove|upgrade|deconfigure)
        if [ "$(dkms status -m gdrdrv -v {ver})" ]; then
            dkms remove -m gdrdrv -v {ver} --all
        fi
        ;;
esac
"""


def gdrdrv_files(ver):
    """path -> (text, mode): /usr/src/gdrdrv-<ver> as gdrdrv-dkms installs it for `dkms add`."""
    base = GDRDRV_SRC.format(ver=ver)
    files = {
        f"{base}/dkms.conf": GDRDRV_DKMS_CONF.format(ver=ver),
        f"{base}/Makefile": GDRDRV_MAKEFILE.format(),
        f"{base}/gdrdrv.c": GDRDRV_C.format(ver=ver),
        f"{base}/nv-p2p-dummy.c": GDRDRV_DUMMY_C.format(p2p=P2P_STUBS),
    }
    return {path: (text, 0o644) for path, text in files.items()}


# dh_dkms's maintainer scripts (Debian dkms 3.0.10: postinst-dkms, prerm-dkms), as NVIDIA's packages carry them.
# common.postinst builds for the running kernel and the newest one (in a container, whose running kernel is the
# host's, only on an upgrade); the collection's role builds for every other installed kernel itself.
POSTINST = """if [ "$1" = configure ]; then
    /usr/lib/dkms/common.postinst nvidia {ver} /usr/share/nvidia-dkms "" "$2"
fi
"""
PRERM = """case "$1" in
    remove|upgrade|deconfigure)
        if [ "$(dkms status -m nvidia -v {ver})" ]; then
            dkms remove -m nvidia -v {ver} --all
        fi
        ;;
esac
"""
