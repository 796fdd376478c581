"""The papers' tasks as tf.data pipelines, by name: ``load_task("adding")``.

Generated: ``adding``, ``logic``, ``anbn``, ``anbncn``; bAbI-like stories
(`babi`, arrays for a memory network, not a registered task). Read from the offline
data folder (`data_root`, never downloaded): ``mnist_rows``, ``mnist_pixels``,
``imdb``, ``sst2``, ``sst1``, ``ptb``, ``ptb_chars``, ``imdb_lm``. Each module documents its task.
"""

from keras_rnncells.data import (
    babi,
    imdb_lm,
    logic,
    mnist,
    ptb,
    ptb_chars,
    sentiment,
    synthetic,
)
from keras_rnncells.data.paths import data_file, data_root
from keras_rnncells.data.synthetic import adding_problem
from keras_rnncells.data.tasks import (
    KINDS,
    Task,
    get_task,
    list_tasks,
    load_task,
    register_task,
    size_options,
    task_options,
)
from keras_rnncells.data.vocabulary import build_vocabulary, tokenize

__all__ = [
    "KINDS",
    "Task",
    "adding_problem",
    "babi",
    "build_vocabulary",
    "data_file",
    "data_root",
    "get_task",
    "imdb_lm",
    "list_tasks",
    "load_task",
    "logic",
    "mnist",
    "ptb",
    "ptb_chars",
    "register_task",
    "sentiment",
    "size_options",
    "synthetic",
    "task_options",
    "tokenize",
]
