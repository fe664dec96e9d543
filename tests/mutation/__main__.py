import sys

from tests.mutation.runner import main

sys.exit(main())
