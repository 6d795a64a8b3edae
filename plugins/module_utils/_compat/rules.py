# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compatibility rules: a stack (see inputs) and the matrix in, every check with its verdict out.

Pure functions. A check is {rule, status, message, source}; status is ok, warning (runs with limits),
violation (will not work: the message names the components, versions and the fix) or unknown (the matrix
has no row for it).
"""

from __future__ import annotations

import datetime

from ansible_collections.gpufleet.stack.plugins.module_utils._common import versions as v
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import matrix as mx

OK, WARNING, VIOLATION, UNKNOWN = "ok", "warning", "violation", "unknown"
# Days after the matrix's as_of before every verdict warns that its knowledge may be out of date: NVIDIA's driver
# bulletins come about every three months, new branches and framework releases as often.
MAX_AGE_DAYS = 180


def check(rule, status, message, source=None):
    return {"rule": rule, "status": status, "message": message, "source": source or ""}


def _is_branch(driver):
    return len(v.parse(driver) or ()) == 1


def highest_full_cuda(matrix, driver):
    """The newest toolkit (Table 3) this driver fully supports, or None."""
    fits = [r["cuda"] for r in mx.rows(matrix, "cuda_driver") if v.compare(driver, r["min_driver"]) >= 0]
    return max(fits, key=v.parse, default=None)


def driver_vs_cuda(matrix, driver, cuda, rule, what):
    """ok (Table 3 full support), warning (Table 2 minor-version compatibility) or violation; `what` names the
    component that needs the CUDA ("CUDA toolkit 12.8", "torch 2.7.1 (cu128 wheel)").
    """
    row = mx.cuda_min_driver(matrix, cuda)
    if row is None:
        return _without_table3(matrix, driver, cuda, rule, what)
    if _is_branch(driver):
        branch = mx.branch_row(matrix, driver)
        if branch is None:
            return check(rule, UNKNOWN, f"{what}: driver branch {driver} is not in the matrix", mx.cite(row))
        if v.compare(cuda, branch["max_cuda"]) <= 0 or v.major_minor(cuda) == v.major_minor(branch["max_cuda"]):
            return check(
                rule,
                OK,
                f"{what} runs on driver branch {driver} (reports CUDA {branch['max_cuda']}; "
                f"CUDA {v.major_minor(cuda)} needs >= {row['min_driver']})",
                mx.cite(row),
            )
        driver = f"{driver}.999"  # the newest release of the branch: judged below like an exact version
    if v.compare(driver, row["min_driver"]) >= 0:
        return check(
            rule, OK, f"{what} is fully supported by driver {driver} (needs >= {row['min_driver']})", mx.cite(row)
        )
    top = highest_full_cuda(matrix, driver)
    compat = mx.minor_compat(matrix, cuda)
    if compat and v.compare(driver, compat["min_driver"]) >= 0:
        return check(
            rule,
            WARNING,
            f"{what} runs on driver {driver} only through CUDA minor-version "
            f"compatibility (full support needs >= {row['min_driver']}): no PTX JIT of newer PTX and "
            f"some APIs unavailable; upgrade the driver to >= {row['min_driver']} for full support",
            mx.cite(compat),
        )
    choose = f" or choose CUDA <= {top}" if top else ""
    return check(
        rule,
        VIOLATION,
        f"{what} needs driver >= {row['min_driver']} but the driver is {driver}: "
        f"upgrade the driver to >= {row['min_driver']}{choose}",
        mx.cite(row),
    )


def _without_table3(matrix, driver, cuda, rule, what):
    """A toolkit newer than the Table 3 rows (pip's newest nvidia-cuda-runtime, say): what the other rows decide.
    Below the major's minor-version-compatibility floor it cannot run; a branch that reports this CUDA or newer
    runs it fully; an older known branch above the floor runs it with minor-version compatibility's limits."""
    compat, branch = mx.minor_compat(matrix, cuda), mx.branch_row(matrix, driver)
    missing = f"the matrix has no Table 3 row for CUDA {v.major_minor(cuda)}"
    if compat and v.compare(driver if not _is_branch(driver) else f"{driver}.999", compat["min_driver"]) < 0:
        return check(
            rule,
            VIOLATION,
            f"{what} needs a driver >= {compat['min_driver']} (CUDA {v.major(cuda)}.x minor-version compatibility; "
            f"{missing}) but the driver is {driver}: upgrade the driver to >= {compat['min_driver']}",
            mx.cite(compat),
        )
    if branch and v.compare(v.major_minor(branch["max_cuda"]), v.major_minor(cuda)) >= 0:
        return check(
            rule,
            OK,
            f"{what} runs on driver {driver}: its branch {branch['branch']} reports CUDA {branch['max_cuda']}",
            mx.cite(branch),
        )
    if branch and compat:  # the branch reports an older CUDA: below the new toolkit's own floor, above the major's
        return check(
            rule,
            WARNING,
            f"{what} runs on driver {driver} only through CUDA minor-version compatibility (>= "
            f"{compat['min_driver']}): its branch {branch['branch']} reports CUDA {branch['max_cuda']}, so no PTX JIT "
            f"of newer PTX and some APIs unavailable; a branch that reports CUDA {v.major_minor(cuda)} supports it "
            f"fully ({missing})",
            mx.cite(branch),
        )
    return check(
        rule,
        UNKNOWN,
        f"{what}: {missing} and driver {driver}'s branch is not in the matrix either; add them with "
        "gpufleet_compat_matrix_extra",
        mx.cite(compat) if compat else None,
    )


def rule_driver_cuda(matrix, stack):
    if not stack["driver"]:
        return []
    return [driver_vs_cuda(matrix, stack["driver"], c, "driver_cuda", f"CUDA toolkit {c}") for c in stack["cuda"]]


def rule_driver_branch(matrix, stack):
    driver = stack["driver"]
    if not driver:
        return []
    if stack.get("max_cuda"):
        return [
            check(
                "driver_branch", OK, f"driver {driver} reports CUDA {stack['max_cuda']}", stack.get("max_cuda_source")
            )
        ]
    row = mx.branch_row(matrix, driver)
    if row is None:
        return [
            check(
                "driver_branch",
                UNKNOWN,
                f"driver {driver}: its branch is not in the matrix, so the highest "
                "CUDA it supports is unknown; add a `kind: branch` row with gpufleet_compat_matrix_extra",
            )
        ]
    return [
        check(
            "driver_branch",
            OK,
            f"driver {driver} (branch {row['branch']}) reports CUDA {row['max_cuda']} (from the matrix by branch)",
            mx.cite(row),
        )
    ]


def rule_cudnn(matrix, stack):
    cudnn = stack["cudnn"]
    if not cudnn:
        return []
    known = [r for r in mx.rows(matrix, "cudnn") if v.matches(r["cudnn"], cudnn)]
    if not known:
        return [check("cudnn_cuda", UNKNOWN, f"cuDNN {cudnn} is not in the matrix")]
    targets = list(stack["cuda"]) or ([stack["cudnn_cuda"]] if stack.get("cudnn_cuda") else [])
    out = []
    for cuda in targets:
        fits = [r for r in known if v.matches(r["cuda"], cuda)]
        if not fits:
            other = sorted({r["cudnn"] for r in mx.rows(matrix, "cudnn") if v.matches(r["cuda"], cuda)})
            builds = "; ".join(f"CUDA {r['cuda']}" for r in known)
            fix = f"choose cuDNN {' or '.join(other)} for CUDA {cuda}" if other else f"choose a CUDA in {builds}"
            out.append(
                check(
                    "cudnn_cuda",
                    VIOLATION,
                    f"cuDNN {cudnn} has no build for CUDA {cuda} (its builds: {builds}): {fix}",
                    mx.cite(known[0]),
                )
            )
            continue
        row = fits[0]
        if (
            stack["driver"]
            and row.get("min_driver")
            and not _is_branch(stack["driver"])
            and v.compare(stack["driver"], row["min_driver"]) < 0
        ):
            out.append(
                check(
                    "cudnn_driver",
                    VIOLATION,
                    f"cuDNN {cudnn} for CUDA {v.major(cuda)}.x needs driver >= "
                    f"{row['min_driver']} but the driver is {stack['driver']}: upgrade the driver",
                    mx.cite(row),
                )
            )
            continue
        out.append(check("cudnn_cuda", OK, f"cuDNN {cudnn} has a build for CUDA {cuda}", mx.cite(row)))
    return out


def rule_nccl(matrix, stack):
    nccl = stack["nccl"]
    if not nccl:
        return []
    known = [r for r in mx.rows(matrix, "nccl") if v.matches(r["nccl"], nccl)]
    if not known:
        return [check("nccl_cuda", UNKNOWN, f"NCCL {nccl} is not in the matrix")]
    out = []
    build = stack.get("nccl_cuda")
    for cuda in stack["cuda"] or ([build] if build else []):
        if build and v.major(build) != v.major(cuda):
            out.append(
                check(
                    "nccl_cuda",
                    VIOLATION,
                    f"NCCL {nccl} is built for CUDA {build} but the toolkit is "
                    f"CUDA {cuda}: install the NCCL build for CUDA {v.major(cuda)}.x (+cuda{v.major_minor(cuda)})",
                )
            )
            continue
        fits = [r for r in known if v.matches(r["cuda"], cuda)]
        if not fits:
            builds = "; ".join(f"CUDA {r['cuda']}" for r in known)
            out.append(
                check(
                    "nccl_cuda",
                    VIOLATION,
                    f"NCCL {nccl} has no build for CUDA {cuda} (its builds: {builds}):"
                    f" choose an NCCL release published for CUDA {v.major(cuda)}.x",
                    mx.cite(known[0]),
                )
            )
            continue
        out.append(check("nccl_cuda", OK, f"NCCL {nccl} has a build for CUDA {cuda}", mx.cite(fits[0])))
    if build and stack["driver"]:
        out.append(driver_vs_cuda(matrix, stack["driver"], build, "nccl_driver", f"NCCL {nccl}+cuda{build}"))
    return out


def rule_fabricmanager(matrix, stack):
    fm, driver = stack["fabricmanager"], stack["driver"]
    if not fm or not driver:
        return []
    row = next(iter(mx.rows(matrix, "fabricmanager")), None)
    same = v.prefix_match(driver, fm) if _is_branch(driver) else fm == driver
    if same:
        return [
            check(
                "fabricmanager_driver",
                OK,
                f"Fabric Manager {fm} matches driver {driver}",
                mx.cite(row) if row else None,
            )
        ]
    return [
        check(
            "fabricmanager_driver",
            VIOLATION,
            f"Fabric Manager {fm} differs from driver {driver}; they must "
            f"be the same version exactly or nvidia-fabricmanager will not start: install Fabric Manager "
            f"{driver} (nvidia-fabricmanager-{v.major(driver)}={driver}-1)",
            mx.cite(row) if row else None,
        )
    ]


def rule_driver_lifecycle(matrix, stack, today):
    """A driver branch past its end of life (the branch row's `eol`) gets no more security fixes: a warning naming
    the branches still supported. So does a new feature branch (NFB, no `eol`: NVIDIA gives NFBs none) once a newer
    branch is out: its fixes stop there (bulletin 5821 fixed R595 where 5747 had fixed R590). `today` is an ISO date
    (the caller's clock; fixed in tests and docs)."""
    driver = stack["driver"]
    row = mx.branch_row(matrix, driver) if driver else None
    if row is None:
        return []
    kind = f" ({row['lifecycle']})" if row.get("lifecycle") else ""
    if not row.get("eol"):
        if row.get("lifecycle") != "NFB":
            return []
        newer = sorted((r["branch"] for r in mx.rows(matrix, "branch") if v.compare(r["branch"], row["branch"]) > 0),
                       key=v.parse)  # fmt: skip
        if not newer:
            note = f"driver branch {row['branch']}{kind} is the newest branch (a new feature branch: short-lived)"
            return [check("driver_lifecycle", OK, note, mx.cite(row))]
        return [
            check(
                "driver_lifecycle",
                WARNING,
                f"driver branch {row['branch']}{kind} is a new feature branch superseded by {newer[0]}: it gets no "
                f"more fixes; move to {_supported(matrix, today)}",
                mx.cite(row),
            )
        ]
    if not _ended(row, today):
        supported = f"driver branch {row['branch']}{kind} is supported until {row['eol']}"
        return [check("driver_lifecycle", OK, supported, mx.cite(row))]
    when = "" if row["eol"] == "ended" else f" in {row['eol']}"
    return [
        check(
            "driver_lifecycle",
            WARNING,
            f"driver branch {row['branch']}{kind} reached its end of life{when}: no more security or bug fixes; "
            f"move to {_supported(matrix, today)}",
            mx.cite(row),
        )
    ]


def _supported(matrix, today):
    """The branches with a lifecycle and an end of life still ahead, oldest first: "580 (LTSB, until 2028-06), ..."."""
    alive = sorted(
        (r for r in mx.rows(matrix, "branch") if r.get("eol") and r.get("lifecycle") and not _ended(r, today)),
        key=lambda r: v.parse(r["branch"]),
    )
    return ", ".join(f"{r['branch']} ({r['lifecycle']}, until {r['eol']})" for r in alive) or "a supported branch"


def _ended(row, today):
    """Whether a branch row's end of life ("2026-06": through June; "ended") is before `today` (YYYY-MM-DD)."""
    eol = str(row["eol"])
    return eol == "ended" or today[: len(eol)] > eol


def rule_driver_flavor(matrix, stack):
    """A kernel-module flavour the driver's branch does not ship (the branch row's `flavors`: R620 has only the open
    modules): a violation, since there is nothing to install."""
    driver, flavor = stack["driver"], stack.get("driver_flavor")
    row = mx.branch_row(matrix, driver) if driver and flavor else None
    if row is None or not row.get("flavors") or flavor in row["flavors"]:
        return []
    return [
        check(
            "driver_flavor",
            VIOLATION,
            f"driver branch {row['branch']} ships only the {', '.join(row['flavors'])} kernel modules, not the "
            f'{flavor} ones: set gpufleet_stack.driver_flavor (or nvidia_driver_flavor) to "{row["flavors"][0]}", '
            "or stay on the last branch with them (GPUs before Turing need the proprietary modules and R580)",
            mx.cite(row),
        )
    ]


def rule_driver_security(matrix, stack):
    """The driver against NVIDIA's GPU Display Driver security bulletins (driver_cve rows, each with the first fixed
    version per branch): a warning naming each bulletin whose fix for the driver's branch it lacks, and each that lists
    no fix for its branch while fixing newer ones (its notes: "Earlier software GPU branch releases that support these
    products might also be affected"). A warning, not a violation: the fix is a driver upgrade with a reboot, which
    upgrade.yml schedules across the fleet; the CVEs are local ones. A branch alone ("580": its newest) is not read."""
    driver = stack["driver"]
    bulletins = sorted(mx.rows(matrix, "driver_cve"), key=lambda r: str(r["date"]))
    if not driver or _is_branch(driver) or not bulletins:
        return []
    branch = str(v.major(driver))
    missing, unlisted = [], []
    for row in bulletins:
        fixed = {str(b): str(x) for b, x in row["fixed_in"].items()}
        if branch in fixed and v.compare(driver, fixed[branch]) < 0:
            missing.append((row, fixed[branch]))
        elif branch not in fixed and int(branch) < max(int(b) for b in fixed):
            unlisted.append(row)
    if not missing and not unlisted:
        newest = bulletins[-1]
        clean = (
            f"driver {driver} has the fixes of the {len(bulletins)} GPU Display Driver bulletins in the matrix "
            f"(the newest: {newest['bulletin']} of {newest['date']})"
        )
        return [check("driver_security", OK, clean)]
    said = []
    if missing:
        lacks = "; ".join(f"bulletin {r['bulletin']} of {r['date']} ({r['cve']}, CVSS {r['cvss']}; fixed in {x})"
                          for r, x in missing)  # fmt: skip
        floor = max((x for _r, x in missing), key=v.parse)
        said.append(f"lacks the fixes of {lacks}: upgrade to {floor} or newer (gpufleet_stack.driver)")
    if unlisted:
        last = unlisted[-1]
        fixed = sorted(last["fixed_in"].items(), key=lambda i: -int(i[0]))
        which = ", ".join(f"{r['bulletin']} of {r['date']} ({r['cve']}, CVSS {r['cvss']})" for r in unlisted)
        many = len(unlisted) > 1
        said.append(
            f"has no fix in bulletin{'s' if many else ''} {which}: {'they fix' if many else 'it fixes'} "
            f"other branches only (an earlier branch not listed may be affected too); move to a branch "
            f"{last['bulletin']} fixes ({', '.join(str(x) for _b, x in fixed)} or newer)"
        )
    return [
        check(
            "driver_security",
            WARNING,
            f"driver {driver} {'; it '.join(said)}",
            "; ".join(mx.cite(r) for r in [r for r, _x in missing] + unlisted),
        )
    ]


def rule_container_toolkit(matrix, stack):
    """The NVIDIA Container Toolkit against the CVEs published for it (toolkit_cve rows): a violation naming each CVE
    the version has and the first version without any of them."""
    version = stack.get("container_toolkit")
    if not version:
        return []
    known = mx.rows(matrix, "toolkit_cve")
    hits = [r for r in known if v.matches(r["affected"], version)]
    if not hits:
        clean = f"nvidia-container-toolkit {version} has none of the {len(known)} CVEs in the matrix"
        return [check("container_toolkit_cve", OK, clean)]
    floor = max((str(r["fixed"]) for r in hits), key=v.parse)
    listed = "; ".join(f"{r['cve']} ({r['what']}, fixed in {r['fixed']})" for r in hits)
    # Asking for a vulnerable version is refused; one already on a host is a finding to act on, not a failed install.
    status = VIOLATION if stack.get("origin") == "versions" else WARNING
    return [
        check(
            "container_toolkit_cve",
            status,
            f"nvidia-container-toolkit {version} has {listed}: upgrade it to {floor} or newer "
            "(gpufleet_stack.container_toolkit)",
            "; ".join(mx.cite(r) for r in hits),
        )
    ]


def rule_matrix_age(matrix, today, max_age=MAX_AGE_DAYS):
    """A warning on every verdict once the matrix is more than max_age days older than today: the branches,
    bulletins and releases published since are unknown to it. Nothing while it is current, or without an as_of."""
    as_of = matrix.get("as_of")
    if not as_of:
        return []
    age = (datetime.date.fromisoformat(today) - datetime.date.fromisoformat(as_of)).days
    if age <= max_age:
        return []
    return [
        check(
            "matrix_age",
            WARNING,
            f"the compatibility matrix is as of {as_of}, {age} days before today (more than {max_age}): driver "
            "branches, security bulletins and releases since then are unknown to it, so an ok may be out of date; "
            "update the gpufleet.stack collection, or add rows with gpufleet_compat_matrix_extra "
            "(gpufleet_compat_matrix_max_age sets the days)",
        )
    ]
