"""Sentiment from raw text, in plain Keras: strings in, probability out.

The tokenizer is a layer of the model (WordPiece, its vocabulary learned from
the training sentences), so `model.fit` and `model.predict` take Python
strings, and the saved `.keras` file carries the vocabulary. Data: SST-2
(GLUE's training phrases, the Stanford test sentences) from the shared data
directory (`$RNNCELLS_DATA`, else `../shared/data` and the other places
`keras_rnncells.data.data_root` looks).

Run: python examples/sentiment_from_text.py [--quick] [cell]
(default gru; about 3 minutes on 2 CPU cores, 1 epoch)
"""

import sys

import keras
import tensorflow as tf

import keras_rnncells
from keras_rnncells.data.sentiment import read_glue_train, read_stsa
from keras_rnncells.text import WordPieceTokenizer

quick = "--quick" in sys.argv
cell = next((a for a in sys.argv[1:] if not a.startswith("-")), "gru")

train_texts, train_labels = read_glue_train()
test_texts, test_labels = read_stsa("stsa.binary.test")
if quick:
    train_texts, train_labels = train_texts[:2000], train_labels[:2000]
    test_texts, test_labels = test_texts[:200], test_labels[:200]

keras.utils.set_random_seed(0)
tokenizer = WordPieceTokenizer.from_corpus(train_texts, vocab_size=4000, max_length=64)
text = keras.Input((), dtype="string", name="text")
ids = tokenizer(text)  # (batch, longest) int32, padded with 0
embedded = keras.layers.Embedding(tokenizer.vocabulary_size, 64, mask_zero=True)(ids)
summary = keras.layers.Bidirectional(keras_rnncells.RNN(keras_rnncells.get_cell(cell)(64)))(
    embedded
)
probability = keras.layers.Dense(1, activation="sigmoid")(keras.layers.Dropout(0.3)(summary))
model = keras.Model(text, probability)
model.compile(keras.optimizers.Adam(1e-3), "binary_crossentropy", metrics=["accuracy"])


def batches(texts, labels, shuffle=False):
    dataset = tf.data.Dataset.from_tensor_slices((texts, labels.astype("float32")))
    if shuffle:
        dataset = dataset.shuffle(len(texts), seed=0)
    return dataset.batch(64)


model.fit(batches(train_texts, train_labels, shuffle=True), epochs=1)
_, accuracy = model.evaluate(batches(test_texts, test_labels), verbose=0)
print(f"{cell}: test accuracy {accuracy:.1%} on {len(test_texts)} SST-2 test sentences")

reviews = ["a gripping, beautifully acted film", "dull and far too long", ""]
for review, p in zip(reviews, model.predict(tf.constant(reviews), verbose=0)[:, 0]):
    print(f"{p:.2f}  {review!r}")
