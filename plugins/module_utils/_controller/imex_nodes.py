# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hosts of one multi-node NVLink domain (GB200/GB300 NVL), IMEX's nodes, from every host's GPU facts on the
controller (the imex_nodes filter). The node writes them with _node/fabric/imex. Pure functions. PRIVATE to the
collection.

NVIDIA's DRA driver names the domain "<cluster uuid>.<clique id>" (what gpu_facts reports as nvlink_domain); the nodes
file must be the same on every node of the domain, so the list is sorted.
"""

from __future__ import annotations


def gpu_facts_of(hostvars):
    """A host's gpu_facts as this run or the fact cache has them (facts are also injected as top-level vars)."""
    facts = (hostvars.get("ansible_facts") or {}).get("gpufleet_gpu") or hostvars.get("gpufleet_gpu")
    return facts if isinstance(facts, dict) else {}


def address_of(hostvars, name):
    """The address IMEX peers reach the host on: gpufleet_imex_address, else ansible_host, else its name."""
    return str(hostvars.get("gpufleet_imex_address") or hostvars.get("ansible_host") or name)


def domain_nodes(hostvars, hosts, me):
    """{"domain", "nodes", "why"}: the addresses of every host whose facts put it in this host's NVLink domain,
    sorted (the file must be byte-identical on every node); no nodes, and why, when this host's domain is unknown."""
    mine = gpu_facts_of(hostvars[me]).get("nvlink_domain")
    if not mine:
        why = (
            f"{me} reports no NVLink domain (gpu_facts nvlink_domain: its GPUs have not registered with the fabric, "
            "or it has no multi-node NVLink): set nvidia_driver_imex_nodes to the domain's addresses"
        )
        return {"domain": None, "nodes": [], "why": why}
    members = [h for h in hosts if gpu_facts_of(hostvars[h]).get("nvlink_domain") == mine]
    nodes = sorted({address_of(hostvars[h], h) for h in members})
    return {"domain": mine, "nodes": nodes, "why": f"{len(nodes)} nodes whose facts report NVLink domain {mine}"}
