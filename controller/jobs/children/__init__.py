"""The builders of a job's children: the pod of a replica (pods.py), its Service (services.py) and the job's PodGroup
(podgroup.py), each made from the job alone. Pure: they decide nothing and do no I/O."""
