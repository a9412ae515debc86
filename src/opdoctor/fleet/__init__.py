"""``opdoctor fleet``: the same check on every node of a distributed job, and what differs.

* :mod:`opdoctor.fleet.env` — rank, world and rendezvous from the launcher's environment;
* :mod:`opdoctor.fleet.fingerprint` — what one node contributes (host, environment, bytes of
  the target and its dependencies, verdict);
* :mod:`opdoctor.fleet.gather` — collecting the records on rank 0 with ``torch.distributed``
  (imported there only), with a deadline;
* :mod:`opdoctor.fleet.group` — grouping by fingerprint, differences, exit code;
* :mod:`opdoctor.fleet.render` — text, JSON, SARIF, JUnit, GitHub.

The command body is :mod:`opdoctor.cli.fleet`.
"""
