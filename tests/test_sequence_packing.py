"""Sequence packing's attention (memlib.training.packing), derived by hand."""

import pytest

from memlib.training.packing import (causal_attention_pairs, cross_document_pairs, cu_seqlens,
                                     packed_attention_flops, packing_attention_saving)


def test_two_tiny_documents():
    # docs of 2 and 3 tokens: per document 2*3/2 + 3*4/2 = 3 + 6 = 9 pairs; one causal mask over 5: 5*6/2 = 15;
    # cross-document: the 3 tokens of doc 2 each see the 2 of doc 1 = 6
    assert causal_attention_pairs([2, 3]) == 9
    assert causal_attention_pairs([2, 3], per_document=False) == 15
    assert cross_document_pairs([2, 3]) == 6
    assert cu_seqlens([2, 3]) == [0, 2, 5]


def test_eight_4k_documents_in_a_32k_row():
    # 8 x 4,096: per document 8 x 4096 x 4097 / 2 = 67,125,248; full 32768 x 32769 / 2 = 536,887,296;
    # cross = C(8,2) x 4096^2 = 28 x 16,777,216 = 469,762,048; saving 469,762,048 / 536,887,296 = 0.87497 (~7/8)
    docs = [4096] * 8
    assert causal_attention_pairs(docs) == 67_125_248
    assert causal_attention_pairs(docs, per_document=False) == 536_887_296
    assert cross_document_pairs(docs) == 469_762_048
    assert packing_attention_saving(docs) == pytest.approx(0.87497, abs=1e-5)


def test_flops_per_pair_llama31_8b():
    # 12 x L x H x Q = 12 x 32 x 32 x 128 = 1,572,864 FLOPs per pair (training), a third for the forward
    assert packed_attention_flops("llama-3.1-8b", [2, 3]) == 9 * 1_572_864
    assert packed_attention_flops("llama-3.1-8b", [2, 3], training=False) == 9 * 524_288


@pytest.mark.parametrize("bad", [[], [0, 3], "4096", 4096, [1.5]])
def test_bad_input(bad):
    with pytest.raises(ValueError):
        causal_attention_pairs(bad)
