"""Monte Carlo studies: a grid over scenario fields × replications, run on an executor,
stored row by row, summarised and drawn."""

from privsim.studies.store import ResultStore, load
from privsim.studies.study import Study, StudyError, Task, load_study

__all__ = ["ResultStore", "Study", "StudyError", "Task", "load", "load_study"]
