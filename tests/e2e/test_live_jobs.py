"""Live jobs end to end against localcluster: what users do to a job while it runs, and the rules that hold
whatever they do (the spec's "Live jobs"; ARCHITECTURE.md's "Invariants of the engine"). Each test is one of
issue 23's sequences, synchronised on the job's status, its pods and its Events, with timeouts."""

from __future__ import annotations

from .conftest import FOREVER, QUICK, genericjob, phase, replicas, scripts, until


async def test_editing_a_finished_job_changes_nothing_and_says_so_once(cluster, controllers, jobs, history):
    # cleanUpPolicy None keeps every pod (and its logs) of a finished job; scaling it afterwards must neither
    # delete the pods of the ranks scaled away nor add records for replicas that never ran.
    await controllers.start()
    scripts(cluster, "done", {"worker-0": QUICK, "*": FOREVER})
    await jobs.submit(genericjob("done", {"worker": 3}, successRules=[{"worker": [0]}], cleanUpPolicy="None"))
    finished = await jobs.wait_phase("done", "Succeeded")
    await until(controllers.idle, what="controller idle")
    for count in (1, 4):
        spec = (await jobs.get("done"))["spec"]
        spec["replicaSpecs"][0]["replicas"] = count
        edited = await jobs.patch("done", {"spec": {"replicaSpecs": spec["replicaSpecs"]}})
        generation = edited["metadata"]["generation"]
        await jobs.wait("done", lambda j, g=generation: j["status"].get("observedGeneration") == g)
        await until(controllers.idle, what="controller idle")
    after = await jobs.get("done")
    pods = await jobs.pods("done")
    assert [p.metadata.name for p in pods] == ["done-worker-0", "done-worker-1", "done-worker-2"]
    assert all(p.metadata.deletion_timestamp is None for p in pods)
    assert sorted(replicas(after)) == sorted(replicas(finished))  # no record for replicas that never ran
    for key in ("phase", "conditions", "completionTime", "backoffCount", "startTime"):
        assert after["status"].get(key) == finished["status"].get(key), key
    assert history.total() == 3 and phase(after) == "Succeeded"

    # One per generation: two edits, said twice (the recorder counts a repeat on the same Event, as client-go's).
    async def said():
        found = [e for e in await jobs.events("done") if e.reason == "SpecChangeIgnored"]
        return found if sum(e.count or 1 for e in found) >= 2 else None

    ignored = await until(said, what="two SpecChangeIgnored Events")
    assert sum(e.count or 1 for e in ignored) == 2 and {e.type for e in ignored} == {"Normal"}
    assert ignored[0].message == "the job has finished; spec changes are ignored"
