"""Your own Keras model to TF Serving and ONNX Runtime.

A functional model of ours (an MGU under a masked embedding, with a second
input) is trained for a moment, then exported twice: a SavedModel in TF
Serving's layout (`export/<name>/1/`) and an ONNX file. Each writer checks
its artifact before publishing it (the SavedModel in a fresh process with XLA
JIT disabled, as the model server runs it; the ONNX model in onnxruntime) and
writes `manifest.json` with the parity measured. Then the ONNX model is run
here as a user runs it, and compared with `model.predict`.

Run: python examples/export_user_model.py [--quick] [--out DIR]
(default ./export-example; about a minute on 2 CPU cores)
"""

import argparse

import keras
import numpy as np
import onnxruntime

import keras_rnncells
from keras_rnncells.export import write_onnx, write_saved_model

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--quick", action="store_true", help="a smaller model and data set")
parser.add_argument("--out", default="export-example", help="where the exports go")
args = parser.parse_args()

rng = np.random.default_rng(0)
vocabulary, steps = 50, 12
ids = rng.integers(1, vocabulary, size=(256 if args.quick else 2048, steps)).astype("int32")
ids[:, -3:] = 0  # padding, masked by the embedding
hour = rng.uniform(0, 1, size=(len(ids), 1)).astype("float32")
label = ((ids[:, 0] % 2 == 0) ^ (hour[:, 0] > 0.5)).astype("float32")

tokens = keras.Input((None,), dtype="int32", name="tokens")
time_of_day = keras.Input((1,), name="hour")
embedded = keras.layers.Embedding(vocabulary, 16, mask_zero=True)(tokens)
summary = keras_rnncells.MGU(32)(embedded)
joined = keras.layers.Concatenate()([summary, time_of_day])
score = keras.layers.Dense(1, activation="sigmoid", name="score")(joined)
model = keras.Model({"tokens": tokens, "hour": time_of_day}, score, name="my-model")
model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
model.fit({"tokens": ids, "hour": hour}, label, epochs=1 if args.quick else 5, verbose=0)

saved = write_saved_model(model, args.out)
onnx_file = f"{args.out}/onnx/my-model/{saved.name}/model.onnx"
manifest = write_onnx(model, onnx_file, version=int(saved.name))
print(f"SavedModel: {saved}")
checked = max(manifest["parity"]["max_abs_error"].values())
print(f"ONNX:       {onnx_file} (checked in onnxruntime: largest error {checked:.1e})")

# onnxruntime, as a client runs it: inputs by name, a batch of any size
session = onnxruntime.InferenceSession(onnx_file, providers=["CPUExecutionProvider"])
names = [i.name for i in session.get_inputs()]
request = {"tokens": ids[:5], "hour": hour[:5]}
answer = session.run(None, {name: request[name] for name in names})[0]
expected = model.predict(request, verbose=0)
print(
    f"inputs {names}; largest difference from model.predict: {np.abs(answer - expected).max():.1e}"
)
