"""The Dagster code location (issue 6): assets, sensors, schedules and checks for the Spark jobs.

Not built yet: ``defs`` is an empty code location so that ``workspace.yaml`` loads.
"""

from dagster import Definitions

defs = Definitions()
