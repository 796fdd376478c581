"""Sorting numbers with a pointer decoder, over a set or over a sequence: the
comparison of "Order matters" (Vinyals, Bengio & Kudlur 2016, section 4.4)."""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
from keras import ops

from keras_rnncells.checks import check_choice, check_positive_int
from keras_rnncells.layers.named import LSTM
from keras_rnncells.sets.pointer import PointerDecoder
from keras_rnncells.sets.set_encoder import SetEncoder

ENCODERS = ("set", "sequence")


@keras.saving.register_keras_serializable(package="keras_rnncells")
class PointerSorter(keras.Model):
    """Outputs the indices of its numbers in sorted order, pointing at them.

    * ``encoder="set"``: read-process-write. `SetEncoder` (``steps`` process
      steps) reads the set; `PointerDecoder` starts from the process block's
      final states, its first input the last read ``r_K`` (so it starts from
      all of ``q*_K``), and points at the memories ``m_i``.
    * ``encoder="sequence"``: the sequence-to-sequence reference. A read
      embedding like the set encoder's (``Dense``, tanh), then an LSTM over
      the numbers in the given order; the same pointer decoder starts from
      its final states and points at its outputs (a Pointer Network,
      Vinyals et al. 2015).

    ``call({"numbers": (batch, n, 1), "targets": (batch, n)})`` gives the
    teacher-forced logits (batch, n, n) for training; ``call({"numbers": x})``
    the greedy decoding's logits. `sort` returns the greedy pointers. The
    decoder may point at an element twice, as in the papers (`PointerDecoder`'s
    ``exclude_chosen`` would make the task trivial).
    """

    def __init__(
        self,
        encoder: str = "set",
        units: int = 32,
        steps: int = 5,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.encoder_kind = check_choice("encoder", encoder, ENCODERS)
        self.units = check_positive_int("units", units)
        self.steps = check_positive_int("steps", steps)
        if self.encoder_kind == "set":
            self.encoder = SetEncoder(units, steps=steps, return_state=True, name="set_encoder")
        else:
            self.read = keras.layers.Dense(units, activation="tanh", name="read")
            self.encoder = LSTM(
                units, return_sequences=True, return_state=True, name="sequence_encoder"
            )
        self.decoder = PointerDecoder(
            units, learned_first_input=self.encoder_kind == "sequence", name="decoder"
        )

    def decode(self, inputs, training=False) -> Any:
        numbers = inputs["numbers"]
        if self.encoder_kind == "set":
            q_star, memories, *states = self.encoder(numbers, training=training)
            first_input = q_star[:, self.units :]
        else:
            memories, *states = self.encoder(self.read(numbers), training=training)
            first_input = None
        return self.decoder(
            memories,
            states,
            targets=inputs.get("targets"),
            first_input=first_input,
            training=training,
        )

    def call(self, inputs, training=False):
        result = self.decode(inputs, training)
        return result if "targets" in inputs else result[1]

    def sort(self, numbers: np.ndarray, batch_size: int = 256) -> np.ndarray:
        """The greedy decoding's pointers (samples, n) for ``numbers``
        (samples, n, 1)."""
        numbers = np.asarray(numbers, dtype="float32")
        rows = [
            ops.convert_to_numpy(self.decode({"numbers": numbers[i : i + batch_size]})[0])
            for i in range(0, len(numbers), batch_size)
        ]
        return np.concatenate(rows)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "encoder": self.encoder_kind,
            "units": self.units,
            "steps": self.steps,
        }


def exact_match(pointers: np.ndarray, targets: np.ndarray) -> float:
    """The fraction of rows whose pointers equal the targets at every step."""
    return float(np.mean(np.all(pointers == targets, axis=-1)))
