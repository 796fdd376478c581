"""A cell of your own in `model.fit`: a gated unit written as `project_inputs`
plus `step`, run on the fused loop, compared with the GRU on the adding
problem (Le et al. 2015: the sum of the two marked numbers of a sequence).

The cell, a "coupled minimal unit": one gate u decides both how much of the
state to keep and how much of the candidate to write,

    u_t = sigmoid(W_u x_t + U_u h_{t-1} + b_u)
    c_t = tanh(W_c x_t + U_c h_{t-1} + b_c)
    h_t = u_t * h_{t-1} + (1 - u_t) * c_t

Registering it (`register_cell`) makes it a `--cell` of every `rnncells`
command and application in this process, and `keras_rnncells.RNN(cell)` runs
it with the input projection hoisted out of the loop.

Run: python examples/custom_cell.py [--quick]   (about 15 s on 2 CPU cores: test MSE
0.0020 for the coupled unit and 0.0004 for the GRU measured, 0.167 for the mean)
"""

import sys

import keras
import numpy as np

import keras_rnncells
from keras_rnncells.data.synthetic import adding_problem


@keras_rnncells.register_cell("coupled")
@keras.saving.register_keras_serializable(package="examples")
class CoupledCell(keras_rnncells.GatedCell):
    """h_t = u_t * h_{t-1} + (1 - u_t) * tanh(W_c x_t + U_c h_{t-1} + b_c)."""

    blocks = ("u", "c")  # column blocks of kernel, recurrent_kernel and bias

    def step(self, projected, states, context):  # context: training, masks, recorder
        x_u, x_c = projected  # W x + b for every time step, computed once
        h = states[0]
        u_u, u_c = keras.ops.split(self.recurrent_matmul(h, context), 2, axis=-1)
        u = self.recurrent_activation(x_u + u_u)
        candidate = self.activation(x_c + u_c)
        h = u * h + (1.0 - u) * candidate
        return h, [h]


quick = "--quick" in sys.argv
steps, epochs = (20, 1) if quick else (50, 5)
x_train, y_train = adding_problem(512 if quick else 4000, steps, seed=0)
x_test, y_test = adding_problem(256 if quick else 1000, steps, seed=1)

for name, layer in (
    ("coupled (ours)", keras_rnncells.RNN(CoupledCell(32))),
    ("GRU", keras_rnncells.GRU(32)),
):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((steps, 2)), layer, keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(1e-2), "mse")
    model.fit(x_train, y_train, batch_size=32, epochs=epochs, verbose=0)
    mse = model.evaluate(x_test, y_test, verbose=0)
    baseline = float(np.mean((y_test - y_train.mean()) ** 2))
    print(f"{name:>15}: test MSE {mse:.4f} (predicting the mean: {baseline:.4f})")

model.save("custom_cell.keras")  # loads back wherever CoupledCell is imported
print("saved custom_cell.keras")
