"""A real TensorFlow training script, written for a cluster: it reads the TF_CONFIG the controller gives each
task. With workers only it runs MultiWorkerMirroredStrategy (every worker on the same port, 2222) and checks an
all-reduce over them; with parameter servers, the chief coordinates ParameterServerStrategy steps run by the
workers on variables held by the ps tasks, and the workers and ps serve until the job ends."""

import json
import os

import tensorflow as tf

config = json.loads(os.environ["TF_CONFIG"])
task, cluster = config["task"], config["cluster"]
resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
if "ps" not in cluster:
    strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)

    @tf.function
    def step():
        return tf.distribute.get_replica_context().all_reduce("sum", tf.constant(float(task["index"] + 1)))

    total = strategy.experimental_local_results(strategy.run(step))[0].numpy()
    expected = sum(range(1, len(cluster["worker"]) + 1))
    assert total == expected, (total, expected)
    print(f"{task['type']}-{task['index']}: all-reduce over {len(cluster['worker'])} workers gave {total}", flush=True)
elif task["type"] in ("worker", "ps"):
    server = tf.distribute.Server(resolver.cluster_spec(), job_name=task["type"], task_index=task["index"],
                                  protocol="grpc", start=True)
    print(f"{task['type']}-{task['index']} serving", flush=True)
    server.join()  # until the job ends
else:  # the chief coordinates
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        total = tf.Variable(0.0)

    @tf.function
    def step():
        total.assign_add(1.0)

    for _ in range(10):
        coordinator.schedule(step)
    coordinator.join()
    assert total.numpy() == 10.0, total.numpy()
    print(f"chief: 10 steps on {len(cluster['worker'])} workers, total {total.numpy()} on the ps", flush=True)
