"""SigLIP's tokeniser as Hugging Face's SiglipTokenizer runs it, over SentencePiece's own Python
encoder (python3-sentencepiece), and the tiny unigram model the tests train in its stead (no real
spiece.model is available offline). Written from HF's tokenization_siglip.py and big_vision's
canonicalize_text; nothing here comes from vitattn. Used by tests/oracle/test_siglip_tokenizer.py
(the tokeniser against these steps) and siglip_reference.text_model_folder (a SigLIP with its
text tower, for test_siglip_text.py and tests/browser/test_report_siglip_texts.py).
"""
import random
import re
import string
from pathlib import Path

from harness import need

UNDERLINE = "\u2581"
WORDS = ("a photo of the cat dog bird car truck house tree flower river mountain city street "
         "red green blue small large old new two three many some on in under with near and "
         "painting drawing picture sketch close up view people person man woman child playing "
         "running sitting standing eating water snow grass sky night day sunset beach café").split()


def sentencepiece_modules():
    try:
        import sentencepiece as spm
        from sentencepiece import sentencepiece_model_pb2
    except ImportError:
        need(False, "python3-sentencepiece (with python3-protobuf) is not installed")
    return spm, sentencepiece_model_pb2


def train_tiny_model(path, normalization):
    """A unigram model of 100 pieces, SigLIP's special pieces in T5's layout. `normalization`
    "nmt_nfkc" is SentencePiece's default (NFKC, extra spaces removed), as in SigLIP's model;
    "identity" keeps every character and space as given, so that no difference in the
    canonicalisation (a whitespace character missed) is hidden by the model's own normaliser."""
    spm, _ = sentencepiece_modules()
    rng = random.Random(7)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(3000)]
    corpus += ["0 1 2 3 4 5 6 7 8 9 50 100 2024", "été naïve café"]
    with open(path, "wb") as model:
        spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus), model_writer=model, vocab_size=100,
                                       model_type="unigram", pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
                                       pad_piece="<pad>", eos_piece="</s>", unk_piece="<unk>",
                                       character_coverage=1.0, minloglevel=2,
                                       normalization_rule_name=normalization,
                                       remove_extra_whitespaces=normalization != "identity")


def hf_processor(path):
    """The model as HF's SiglipTokenizer.get_spm_processor loads it: add_dummy_prefix off."""
    spm, model_pb2 = sentencepiece_modules()
    model = model_pb2.ModelProto.FromString(Path(path).read_bytes())
    no_prefix = model_pb2.NormalizerSpec()
    no_prefix.add_dummy_prefix = False
    model.normalizer_spec.MergeFrom(no_prefix)
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(model.SerializeToString())
    return sp


def hf_canonicalize(text):
    text = text.translate(str.maketrans("", "", string.punctuation))
    text = re.sub(r"\s+", " ", text)
    return text.strip()


def hf_normalized(text):
    """Steps 1-3: the text HF hands to SentencePiece after its "<unk>" prefix."""
    text = UNDERLINE + text.replace(UNDERLINE, " ")
    text = re.sub(r"(.+?)", lambda m: m.group(1).lower(), text)
    return hf_canonicalize(text)


def hf_ids(sp, text, context=64, truncate=False):
    """HF's ids for `text`, or ("error", count with the end token) when it does not fit."""
    text = hf_normalized(text)
    unk_length = len(sp.encode("<unk>", out_type=str))
    pieces = sp.encode("<unk>" + text, out_type=str)
    pieces = pieces[unk_length:] if len(pieces) >= unk_length else pieces
    ids = [sp.piece_to_id(p) for p in pieces]
    eos = sp.piece_to_id("</s>")
    if len(ids) > context - 1:
        if not truncate:
            return ("error", len(ids) + 1)
        ids = ids[:context - 1]
    ids.append(eos)
    return ids + [eos] * (context - len(ids))
