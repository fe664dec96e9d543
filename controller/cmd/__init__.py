"""The command line: `genericjob-controller run|local` and its flags."""
