// The library, <ordo/ordo.h>: text in, vectors out.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <ordo/ordo.h>

#include "paths.h"

namespace ordo {
namespace {

// Three rows of d = 2, hand-computed.
TEST(Pool, MeanFirstAndNone) {
  const float rows[] = {1, 2, 3, 4, 8, -3};  // (3, 2)
  EXPECT_EQ(pool(rows, 3, 2, Pooling::Mean), (std::vector<float>{4, 1}));
  EXPECT_EQ(pool(rows, 3, 2, Pooling::First), (std::vector<float>{1, 2}));
  EXPECT_EQ(pool(rows, 3, 2, Pooling::None), std::vector<float>(rows, rows + 6));
  EXPECT_EQ(pool(rows, 0, 2, Pooling::Mean), (std::vector<float>{0, 0})) << "no tokens: zeros";
  EXPECT_EQ(pool(rows, 0, 2, Pooling::First), (std::vector<float>{0, 0}));
  EXPECT_TRUE(pool(rows, 0, 2, Pooling::None).empty());
}

// Max: each dimension's largest value, whichever row holds it; hand-computed.
TEST(Pool, Max) {
  const float rows[] = {1, 2, 3, 4, 8, -3};  // (3, 2): column 0 peaks in row 2, column 1 in row 1
  EXPECT_EQ(pool(rows, 3, 2, Pooling::Max), (std::vector<float>{8, 4}));
  const float negative[] = {-5, -1, -2, -7, -3, -4};  // (2, 3): all below zero, so not max(0, ...)
  EXPECT_EQ(pool(negative, 2, 3, Pooling::Max), (std::vector<float>{-5, -1, -2}));
  EXPECT_EQ(pool(rows, 1, 2, Pooling::Max), (std::vector<float>{1, 2})) << "one row: itself";
  EXPECT_EQ(pool(rows, 0, 2, Pooling::Max), (std::vector<float>{0, 0})) << "no tokens: zeros";
}

// sentence-transformers' other modes on the same rows, hand-computed: the sum (12, 3) over √3; the
// weights 1, 2, 3 (1·(1,2) + 2·(3,4) + 3·(8,−3) = (31, 1), over 6); the last row.
TEST(Pool, MeanSqrtLenWeightedMeanAndLast) {
  const float rows[] = {1, 2, 3, 4, 8, -3};  // (3, 2)
  const std::vector<float> sqrt_len = pool(rows, 3, 2, Pooling::MeanSqrtLen);
  EXPECT_FLOAT_EQ(sqrt_len[0], float(12 / std::sqrt(3.0)));
  EXPECT_FLOAT_EQ(sqrt_len[1], float(3 / std::sqrt(3.0)));
  const std::vector<float> weighted = pool(rows, 3, 2, Pooling::WeightedMean);
  EXPECT_FLOAT_EQ(weighted[0], float(31 / 6.0));
  EXPECT_FLOAT_EQ(weighted[1], float(1 / 6.0));
  EXPECT_EQ(pool(rows, 3, 2, Pooling::Last), (std::vector<float>{8, -3}));
  EXPECT_EQ(pool(rows, 2, 2, Pooling::Last), (std::vector<float>{3, 4})) << "the last of two rows";
  EXPECT_EQ(pool(rows, 1, 2, Pooling::WeightedMean), (std::vector<float>{1, 2})) << "one row: itself";
  for (Pooling p : {Pooling::MeanSqrtLen, Pooling::WeightedMean, Pooling::Last})
    EXPECT_EQ(pool(rows, 0, 2, p), (std::vector<float>{0, 0})) << "no tokens: zeros";
}

// A Pipeline moves and does not copy: the model, the tokenizer and the encoder (with its settings)
// go with it, and the one moved to answers as the one moved from did.
TEST(Pipeline, MovesWithItsModelAndSettings) {
  static_assert(std::is_nothrow_move_constructible_v<Pipeline> && std::is_nothrow_move_assignable_v<Pipeline>);
  static_assert(!std::is_copy_constructible_v<Pipeline> && !std::is_copy_assignable_v<Pipeline>);
  Pipeline a(ORDO_DEFAULT_MODEL);
  a.set_masked_heads({{0, 0}});
  const std::vector<float> want = a.encode({"the cat sat on the mat"}, Pooling::Mean)[0].values;
  Pipeline b(std::move(a));
  ASSERT_EQ(b.masked_heads().size(), 1u);
  EXPECT_EQ(b.encode({"the cat sat on the mat"}, Pooling::Mean)[0].values, want);
  Pipeline c(ORDO_DEFAULT_MODEL);
  EXPECT_NE(c.encode({"the cat sat on the mat"}, Pooling::Mean)[0].values, want) << "head 0,0 changes the vector";
  c = std::move(b);
  EXPECT_EQ(c.encode({"the cat sat on the mat"}, Pooling::Mean)[0].values, want);
  EXPECT_EQ(c.config().d_model, int(want.size()));
}

// Through the pipeline: the max-pooled vector is the column maxima of the text's own rows.
TEST(Pipeline, MaxPoolingIsColumnMaxOfRows) {
  Pipeline pipeline(ORDO_DEFAULT_MODEL);
  const std::vector<std::string> texts = {"the cat sat on the mat", "a"};
  const auto rows = pipeline.encode(texts, Pooling::None);
  const auto maxed = pipeline.encode(texts, Pooling::Max);
  const int d = pipeline.config().d_model;
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_EQ(maxed[i].rows, 1);
    ASSERT_EQ(int(maxed[i].values.size()), d);
    ASSERT_GT(rows[i].rows, 0);
    for (int j = 0; j < d; ++j) {
      float m = rows[i].values[j];
      for (int t = 1; t < rows[i].rows; ++t) m = std::max(m, rows[i].values[size_t(t) * d + j]);
      EXPECT_FLOAT_EQ(maxed[i].values[j], m) << texts[i] << " dim " << j;
    }
  }
}

// Padding rows of a batch never reach a text's pooled vector: each equals the text run alone.
TEST(Pipeline, PoolingSkipsPadding) {
  Pipeline pipeline(ORDO_DEFAULT_MODEL);
  const std::vector<std::string> texts = {"the cat sat on the mat", "a", ""};
  const auto batch = pipeline.encode(texts, Pooling::Mean);
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto alone = pipeline.encode(std::vector<std::string>{texts[i]}, Pooling::Mean);
    ASSERT_EQ(batch[i].values.size(), alone[0].values.size());
    for (size_t j = 0; j < alone[0].values.size(); ++j)
      EXPECT_NEAR(batch[i].values[j], alone[0].values[j], 1e-5) << texts[i] << " dim " << j;
  }
}

const std::string kCorpus = std::string(ORDO_SOURCE_DIR) + "/tests/corpus/";

// A model that adds BOS (id 1) and EOS (id 2): the cut text keeps BOS first and ends in EOS again.
TEST(Pipeline, TruncateKeepsEos) {
  Pipeline pipeline(kCorpus + "odd/bos_eos_truncated");
  Tokenization t = pipeline.tokenize("the cat sat on the mat");
  ASSERT_GT(t.ids.size(), 4u);
  const Tokenization whole = t;
  pipeline.truncate(t, 4);
  ASSERT_EQ(t.ids.size(), 4u);
  ASSERT_EQ(t.pieces.size(), 4u);
  EXPECT_EQ(t.ids.front(), 1);
  EXPECT_EQ(t.ids[1], whole.ids[1]);
  EXPECT_EQ(t.ids[2], whole.ids[2]);
  EXPECT_EQ(t.ids.back(), 2);
  EXPECT_EQ(t.pieces.back(), pipeline.tokenizer().piece(2));
  Tokenization short_text = pipeline.tokenize("a");
  const Tokenization before = short_text;
  pipeline.truncate(short_text, 64);
  EXPECT_EQ(short_text.ids, before.ids) << "a text within the limit is left as it is";
}

// The text rules every client calls (Pipeline::prepare): a limit named the caller's way, the byte
// cap at 256 bytes per token, truncation at a character boundary, the model's own limit named as its.
TEST(TextRules, PrepareRefusesOrCutsAndNamesTheLimit) {
  Pipeline pipeline(ORDO_DEFAULT_MODEL);
  TextLimits limits;
  limits.max_tokens = 3;
  limits.max_tokens_name = "--max-tokens ";
  limits.truncate_hint = "add --truncate";
  try {
    pipeline.prepare("the cat sat on the mat", "argument 1", limits);
    FAIL() << "6 tokens past a limit of 3";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "argument 1: text has 6 tokens, more than --max-tokens 3 (raise it, or add --truncate)");
  }
  const std::string long_text(3 * 256 + 1, 'a');  // one byte past the cap, before any tokenizing
  try {
    pipeline.prepare(long_text, "t", limits);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "t: text is 769 bytes, more than --max-tokens 3 allows (768 bytes; raise it, or add --truncate)");
  }
  limits.truncate = true;
  bool cut = false;
  const Tokenization t = pipeline.prepare("the cat sat on the mat", "t", limits, &cut);
  EXPECT_TRUE(cut);
  EXPECT_EQ(t.ids, std::vector<int32_t>(pipeline.tokenize("the cat sat").ids));
  // "é" is 2 bytes: a cap of 768 falls inside the 385th, which is left out whole.
  std::string accents;
  for (int i = 0; i < 385; ++i) accents += "\xc3\xa9";
  cut = false;
  pipeline.prepare(accents, "t", limits, &cut);
  EXPECT_TRUE(cut);
  EXPECT_EQ(utf8_prefix(accents, 768), 768u);
  EXPECT_EQ(utf8_prefix(accents, 769), 768u);
  EXPECT_FALSE(pipeline.prepare("the cat", "t", limits, &cut).ids.empty());
  EXPECT_FALSE(cut) << "a text within the limit is not cut";
  // No truncation to offer: the advice says only what can be done.
  limits.truncate = false;
  limits.truncate_hint = "";
  try {
    pipeline.prepare("the cat sat on the mat", "t", limits);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "t: text has 6 tokens, more than --max-tokens 3 (raise it)");
  }
  // The model's own limit (a learned table of 4) is named as the model's.
  Pipeline learned(std::string(ORDO_SOURCE_DIR) + "/tests/corpus/bad/txt_learned_positions");
  TextLimits python;  // the defaults: Python's keywords, max_tokens=8192
  try {
    learned.prepare("the cat sat on the mat", "texts[0]", python);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "texts[0]: text has 12 tokens, more than the model's max_positions 4 (pass truncate=True to "
                 "cut it)");
  }
  EXPECT_EQ(learned.token_limit(python), 4);
  EXPECT_EQ(max_text_bytes(4), 1024u);
}

// The learned position table sets the limit; a sinusoidal model is limited by memory alone.
TEST(Pipeline, MaxTokensIsTheLearnedTableOrMemory) {
  Pipeline learned(kCorpus + "bad/txt_learned_positions");
  EXPECT_EQ(learned.max_tokens(), 4);
  EXPECT_EQ(learned.max_tokens_reason(), "the model's max_positions 4");
  Pipeline sinusoidal(ORDO_DEFAULT_MODEL);
  const int n = sinusoidal.max_tokens();
  EXPECT_GT(n, 8192) << "the default model runs a text of --max-tokens' default on any machine with 1 GB";
  EXPECT_EQ(sinusoidal.max_tokens_reason(),
            "this machine's memory (a text of at most " + std::to_string(n) + " tokens)");
}

// Texts written in place, as the README shows them: two string literals also fit
// std::vector<Tokenization>'s (first, last) constructor, so these calls compile only because of
// the std::initializer_list<std::string> overloads; they give what the std::vector calls give.
TEST(Pipeline, TextsWrittenInPlaceCompileAndMatch) {
  Pipeline pipeline(ORDO_DEFAULT_MODEL);
  const std::vector<std::string> texts = {"the cat sat on the mat", "mat the on sat cat the"};
  const std::vector<Scored> s = pipeline.score({"the cat sat on the mat", "mat the on sat cat the"});
  const std::vector<Scored> by_vector = pipeline.score(texts);
  ASSERT_EQ(s.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(s[i].pll, by_vector[i].pll);
    EXPECT_EQ(s[i].log_probs, by_vector[i].log_probs);
  }
  EXPECT_GT(s[0].pll, s[1].pll) << "the model prefers the ordinary order";
  const std::vector<Encoded> e = pipeline.encode({"the cat", "a dog"}, Pooling::Mean);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1].values, pipeline.encode(std::vector<std::string>{"the cat", "a dog"}, Pooling::Mean)[1].values);
  EXPECT_EQ(pipeline.score({"the cat"}, /*positions=*/false).size(), 1u);
}

// encode_sorted: batches of similar lengths, each text's result handed back under its own index,
// the same vectors (within float rounding of a different batch's padding) as one text at a time.
// encode(texts) on many texts runs them sorted into batches (encode_sorted) and hands each result
// back in its text's place: the same as each text alone, to float rounding; an error still names
// the text by its index.
TEST(Pipeline, EncodeOfManyTextsMatchesEachTextAlone) {
  Pipeline pipeline(ORDO_DEFAULT_MODEL);
  const std::vector<std::string> words = {"the", "cat", "sat", "on", "a", "mat", "while", "dogs", "bark"};
  std::vector<std::string> texts;
  for (int i = 0; i < 300; ++i) {  // more than kBatchTexts, of lengths 0 to 40 words, out of order
    std::string t;
    for (int w = 0; w < (i * 37) % 41; ++w) t += (t.empty() ? "" : " ") + words[(i + w) % words.size()];
    texts.push_back(t);
  }
  const auto all = pipeline.encode(texts, Pooling::Mean, /*normalize=*/true);
  ASSERT_EQ(all.size(), texts.size());
  for (size_t i = 0; i < texts.size(); i += 7) {
    const auto alone = pipeline.encode(std::vector<std::string>{texts[i]}, Pooling::Mean, true)[0];
    EXPECT_EQ(all[i].tokens.ids, alone.tokens.ids) << i;
    ASSERT_EQ(all[i].values.size(), alone.values.size()) << i;
    for (size_t k = 0; k < alone.values.size(); ++k) EXPECT_NEAR(all[i].values[k], alone.values[k], 1e-5f) << i;
  }
  texts[150] = "bad \xC3\x28 text";
  try {
    pipeline.encode(texts, Pooling::Mean);
    FAIL() << "invalid UTF-8 was encoded";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("texts[150]: ", 0), 0u) << e.what();
  }
}

TEST(Pipeline, EncodeSortedHandsEachTextBackUnderItsIndex) {
  Pipeline pipeline(ORDO_DEFAULT_MODEL);
  const std::vector<std::string> texts = {"the cat sat on the mat and then it slept",
                                          "a dog",
                                          "",
                                          "the mat sat on the cat",
                                          "birds fly",
                                          "one two three four five six"};
  std::vector<Tokenization> tokens;
  for (const std::string& t : texts) tokens.push_back(pipeline.tokenize(t));
  std::vector<int> seen(texts.size(), 0);
  std::vector<size_t> batch_order;
  pipeline.encode_sorted(
      tokens, Pooling::Mean, false, {}, /*max_texts=*/2, [](size_t i) { return "text " + std::to_string(i); },
      [&](size_t i, Encoded& e) {
        ++seen[i];
        batch_order.push_back(i);
        EXPECT_EQ(e.tokens.ids, tokens[i].ids) << i;
        if (tokens[i].ids.empty()) return;
        const auto alone = pipeline.encode(std::vector<std::string>{texts[i]}, Pooling::Mean)[0].values;
        ASSERT_EQ(e.values.size(), alone.size());
        for (size_t k = 0; k < alone.size(); ++k) EXPECT_NEAR(e.values[k], alone[k], 1e-5f) << i;
      });
  EXPECT_EQ(seen, std::vector<int>(texts.size(), 1));
  for (size_t k = 1; k < batch_order.size(); ++k)  // shortest first
    EXPECT_LE(tokens[batch_order[k - 1]].ids.size(), tokens[batch_order[k]].ids.size());
}

// No model found (default_model_dir() returned ""): a sentence saying what to do, not ": no such
// model directory" with an empty name.
TEST(Pipeline, AnEmptyModelDirectorySaysWhatToDo) {
  try {
    Pipeline p("");
    FAIL() << "an empty model directory loaded";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "ordo::Pipeline: no model directory given (default_model_dir() found none: set ORDO_MODEL, or "
              "install ordo with cmake --install, or pass a model directory)");
  }
}

TEST(SplitLines, BomCrAndNul) {
  std::vector<std::string> where;
  EXPECT_EQ(split_lines("\xEF\xBB\xBF"
                        "a\r\nb\n\nc",
                        "f", &where),
            (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(where, (std::vector<std::string>{"f: line 1", "f: line 2", "f: line 3", "f: line 4"}));
  EXPECT_THROW(split_lines(std::string("a\nb\0c", 5), "f"), InputError);
  EXPECT_THROW(split_lines("\xFF\xFE"
                           "a",
                           "f"),
               InputError);
}

TEST(Pipeline, BatchOfEmptyTextsIsZeros) {
  Pipeline pipeline(ORDO_DEFAULT_MODEL);
  for (Pooling pooling : {Pooling::Mean, Pooling::First, Pooling::None}) {
    const auto out = pipeline.encode(std::vector<std::string>{"", ""}, pooling);
    ASSERT_EQ(out.size(), 2u);
    for (const Encoded& e : out) {
      EXPECT_EQ(e.rows, pooling == Pooling::None ? 0 : 1);
      for (float v : e.values) EXPECT_EQ(v, 0.0f);
    }
  }
}

// The contract in ordo.h: one Pipeline shared by several threads, while another thread changes the
// thread count again and again, gives every caller the vectors one thread alone gives.
TEST(Pipeline, SharedByThreadsWhileTheThreadCountChanges) {
  Pipeline pipeline(ORDO_DEFAULT_MODEL);
  const std::vector<std::vector<std::string>> batches = {
      {"the cat sat on the mat"},
      {"a dog", "colourless green ideas sleep furiously", ""},
      {std::string(200, 'a') + " long text " + std::string(300, 'b'), "short"}};
  set_num_threads(1);
  std::vector<std::vector<Encoded>> alone;
  for (const auto& texts : batches) alone.push_back(pipeline.encode(texts, Pooling::None));

  std::atomic<int> mismatches{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      for (int r = 0; r < 6; ++r) {
        const size_t k = size_t(i + r) % batches.size();
        const auto out = pipeline.encode(batches[k], Pooling::None);
        for (size_t b = 0; b < out.size(); ++b)
          if (out[b].values != alone[k][b].values) ++mismatches;
      }
    });
  std::thread changer([&] {
    for (int r = 0; !done; ++r) set_num_threads(1 + r % 3);
  });
  for (std::thread& t : threads) t.join();
  done = true;
  changer.join();
  set_num_threads(0);
  EXPECT_EQ(mismatches, 0) << "texts whose vectors differ from the same batch on one thread";
}

}  // namespace
}  // namespace ordo

namespace ordo {
namespace {

TEST(Pooling, NamesAndNothingElse) {
  Pooling p = Pooling::None;
  ASSERT_TRUE(pooling_from_name("mean", &p));
  EXPECT_EQ(p, Pooling::Mean);
  ASSERT_TRUE(pooling_from_name("first", &p));
  EXPECT_EQ(p, Pooling::First);
  ASSERT_TRUE(pooling_from_name("max", &p));
  EXPECT_EQ(p, Pooling::Max);
  ASSERT_TRUE(pooling_from_name("none", &p));
  EXPECT_EQ(p, Pooling::None);
  for (Pooling q : {Pooling::Mean, Pooling::First, Pooling::Max, Pooling::MeanSqrtLen, Pooling::WeightedMean,
                    Pooling::Last, Pooling::None}) {  // each name read back as its pooling, and listed
    ASSERT_TRUE(pooling_from_name(pooling_name(q), &p)) << pooling_name(q);
    EXPECT_EQ(p, q) << pooling_name(q);
    EXPECT_NE(std::string(pooling_names()).find(pooling_name(q)), std::string::npos) << pooling_name(q);
  }
  for (const char* bad : {"Mean", "avg", "", "mean ", "lasttoken", "weightedmean", "mean_sqrt_len_tokens"}) {
    p = Pooling::First;
    EXPECT_FALSE(pooling_from_name(bad, &p)) << bad;
    EXPECT_EQ(p, Pooling::First) << "unchanged for " << bad;
  }
}

}  // namespace
}  // namespace ordo
