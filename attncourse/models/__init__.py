"""The package's torch models, one per module (each imports torch; importing this package does not).

* ``encoder_decoder``: ``TransformerEncoderDecoder``, the 2017 paper's encoder–decoder (chapter 12);
* ``decoder_block``: ``DecoderBlock``, masked self-attention, cross-attention and an MLP;
* ``layers``: the pieces the encoder and decoder blocks share;
* ``transformer``: ``TransformerBlock`` and ``TinyTransformer`` (chapter 8);
* ``vit``: ``VisionTransformer`` (chapter 10);
* ``seq2seq``: chapter 0's GRU encoder-decoder with additive or dot-product cross-attention;
* ``seq2seq_transformer``, ``captioner``: chapter 12's trained models.

Every public name is also reachable from the top level (``attncourse.TinyTransformer``), and the
old module paths (``attncourse.transformer``, ``attncourse.vit``, ``attncourse.seq2seq``) still
import, so saved notebooks keep working.
"""

__all__: list = []
