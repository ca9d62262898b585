"""The placement client: where Karmada would put a multi-component job, and why.

It uses the estimator core only through estimator.api (and the generated wire protocol
estimator.pb at its gRPC edges); the import-linter contracts in pyproject.toml hold this
and the edges below (tests/test_layering.py runs them).

Module map (pure logic unless marked as an edge):

    interpreters/   job manifest -> components (one module per job family)
    policy.py       PropagationPolicy -> placement rules, with Karmada's defaults
    clusters.py     Karmada Cluster objects -> summary, models, labels
    fields.py       reading decoded YAML/JSON fields; errors name the field
    clusterstatus.py  member objects -> resourceSummary, as the cluster status controller
    resourcemodels.py Karmada's resource models: defaults, grading, model nodes
    members.py      one view per member, saying where each number came from
    dra.py          devices a member serves through DRA, which no Cluster status counts
    general.py      the general estimator: resource summary and resource-model paths
    accurate.py     EDGE: gRPC fan-out to scheduler-estimators under one deadline
    merge.py        per member, the minimum over authentic answers
    clusterfilter.py  the policy's filters: clusterAffinity, cluster taints, APIs
    select.py       one member: Karmada's order or the tightest fit
    explain.py      per-node reasons from a member snapshot
    placement.py    the whole computation, with accurate answers through one seam
    karmada.py      what Karmada's scheduler itself does: its targets (with v1.19's per-target
                    components) or its error text
    bindings.py     ResourceBindings -> the workloads karmada-scheduler holds in flight
    report.py       table and JSON
    doctor.py       the scenario's silent failures, before they happen
    sources.py      EDGE: reading input files; errors name file and field
    controlplane.py EDGE: a running Karmada control plane (--karmada-kubeconfig): Clusters, the
                    policy that selects the job, estimator Services, in-flight ResourceBindings
    cli.py          EDGE: karmada-place
    wire.py, launch.py, demo.py   model -> protobuf; local estimator processes; make demo
"""
