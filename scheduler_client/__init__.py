"""The placement client: where Karmada would put a multi-component job, and why.

It uses the estimator core only through estimator.api (and the generated wire protocol
estimator.pb at its gRPC edges); the import-linter contracts in pyproject.toml hold this
and the edges below (tests/test_layering.py runs them).

Two rooms and the vocabulary they share (pure logic unless marked as an edge):

karmada/        KARMADA'S ROOM: what Karmada itself does, reproduced (policy and its defaults,
                feature gates, filter plugins, resource models, cluster status, the general
                estimator, the minimum over estimators, its order, the scheduler path). The
                tool reaches it only through the names its __init__ exports; it never
                imports the tool's modules. See karmada/__init__.py.

This tool's own room:
    placement.py    the whole computation, step by step, with accurate answers through one seam:
                    this tool's recommendation (Karmada's order or the tightest fit) beside
                    Karmada's outcome
    verdicts.py     per member, the verdict and its reasons; the job's warnings
    explain.py      per-node reasons from a member snapshot
    doctor.py       the scenario's silent failures, before they happen
    report.py       table and JSON
    memberview.py   one view per member (Cluster object and/or snapshot), saying where each
                    number came from; what Karmada's room reads as a member
    clusters.py     Karmada Cluster objects -> summary, models, labels (and back, for summarize)
    bindings.py     ResourceBindings -> the workloads karmada-scheduler holds in flight
    accurate.py     EDGE: gRPC fan-out to scheduler-estimators under one deadline
    sources.py      EDGE: reading input files; errors name file and field
    controlplane.py EDGE: a running Karmada control plane (--karmada-kubeconfig): Clusters, the
                    policy that selects the job, estimator Services, in-flight ResourceBindings
    cli.py          EDGE: karmada-place, its commands; cliargs.py its flags and the inputs they name
    wire.py, launch.py, demo.py   model -> protobuf; local estimator processes; make demo

The vocabulary both rooms speak (neither room's opinion; these import only estimator.api
and each other):
    interpreters/   job manifest -> components (one module per job family)
    dra.py          devices a member serves through DRA, which no Cluster status counts
    fields.py       reading decoded YAML/JSON fields; errors name the field
    units.py        amounts for people
"""
