"""The package's torch models, one per module (each imports torch; importing this package does not).

* ``encoder_decoder``: ``TransformerEncoderDecoder``, the 2017 paper's encoder–decoder (chapter 12);
* ``decoder_block``: ``DecoderBlock``, masked self-attention, cross-attention and an MLP;
* ``layers``: the pieces the encoder and decoder blocks share.

The earlier models keep their modules for now (``attncourse.transformer``, ``attncourse.vit``,
``attncourse.seq2seq``); every public name is also reachable from the top level, where it stays.
"""

__all__: list = []
