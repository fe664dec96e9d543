"""The scale benchmark suite of the GenericJob controller: `python -m bench.scale --help`.

localcluster (scripted pod runner), the controller, the bare-client floor and the kopf peer each
run as their own process, so each one's CPU and memory are measured on their own.
"""
