"""`genericjob-controller run|local` and `python -m controller run|local`."""

from __future__ import annotations

import sys

from controller.cmd import cli
from controller.runtime import logs, manager


def main(argv: list[str] | None = None) -> int:
    args = cli.parse_args(argv)
    if args.command == "local":
        if getattr(args, "local_unavailable", None):
            print("genericjob-controller: the `local` command is not available: controller.devtools.local could not "
                  f"be imported ({args.local_unavailable}); the image ships `run` only, install the project with its "
                  "'local' extra for `local`", file=sys.stderr)
            return 2
        from controller.devtools import local

        return local.main(args)
    logs.configure(args.log_level, cli.log_format(args), deps_level=args.log_level_deps)
    return manager.main(cli.manager_config(args), args.kubeconfig)


if __name__ == "__main__":
    sys.exit(main())
