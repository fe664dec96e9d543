"""The job kinds, each a package that plugs into the engine (controller/jobs) through `JobKind`."""
