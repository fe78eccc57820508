/**
 * The text the simulated model answers with: short paragraphs in several scripts (Latin with accents,
 * Icelandic, Japanese, Russian, Arabic, Hindi) and emoji, including ZWJ sequences, flags and skin
 * tones, so every answer crosses multi-byte characters and tokens that end inside one. Written for
 * this project. Answers start at a sentence and run on through the paragraphs, wrapping around.
 */
export interface CorpusParagraph {
  readonly sentences: readonly string[];
  /** What joins two sentences of this paragraph (a space, or nothing in Japanese). */
  readonly joiner: string;
}

/** Paragraphs are joined by a blank line. */
export const PARAGRAPH_BREAK = '\n\n';

export const CORPUS: readonly CorpusParagraph[] = [
  {
    joiner: ' ',
    sentences: [
      'A river does not arrive all at once.',
      'It comes as a trickle, then a stream, then a current that carries whatever it meets toward the sea. 🌊',
      'Reading an answer token by token feels much the same: each piece is small, yet together they make a sentence.',
    ],
  },
  {
    joiner: ' ',
    sentences: [
      'Á Íslandi renna jökulárnar hratt til sjávar.',
      'Þær bera með sér sand og ís, og vatnið er kalt allt árið. 🏔️',
    ],
  },
  {
    joiner: '',
    sentences: [
      '川はゆっくりと海へ流れていきます。',
      '小さな言葉が一つずつ届き、やがて長い文章になります。🎏',
    ],
  },
  {
    joiner: ' ',
    sentences: [
      'Река не спешит, но всегда находит дорогу к морю.',
      'Каждое слово приходит отдельно, и только вместе они складываются в ответ. 🚣‍♀️',
    ],
  },
  {
    joiner: ' ',
    sentences: [
      'النهر لا يتوقف أبدًا، بل يجري نحو البحر قطرة بعد قطرة.',
      'وكذلك الجواب يصل كلمة بعد كلمة. 🌙',
    ],
  },
  {
    joiner: ' ',
    sentences: ['नदी धीरे-धीरे समुद्र की ओर बहती है।', 'हर शब्द अलग से आता है। 🙏🏽'],
  },
  {
    joiner: ' ',
    sentences: [
      'The team watched the stream arrive: 👩‍💻 typed, 👨‍👩‍👧‍👦 waited, and 🏳️‍🌈 flags waved.',
      'Nothing was lost in transit, not even the accents in café, naïve and Reykjavík. ✅',
    ],
  },
  {
    joiner: ' ',
    sentences: [
      'A good server sends its last event and then closes the connection.',
      'A careless one stops mid-sentence and leaves the reader guessing whether the answer was finished. 🤔',
    ],
  },
];

/** What the model "thinks" before answering when reasoning is asked for. */
export const REASONING_CORPUS: readonly string[] = [
  'The question is about flow, so I should begin with the main point.',
  'Short sentences stream well, and each one should stand on its own.',
  'I will mention the river, because the picture helps.',
  'Let me check that nothing is cut off before the end.',
  'Accents like é and ñ must survive the trip, and so must 日本語.',
];

/** Words for generated tool-call string arguments. */
export const TOOL_WORDS: readonly string[] = [
  'Reykjavík',
  'Lisbon',
  '東京',
  'Nairobi',
  'Montréal',
  'Kraków',
  'river',
  'harbour',
  'north',
  'summer',
];

/** The whole answer corpus as one text, as answers read it (answers wrap around at the end). */
export function corpusText(): string {
  return CORPUS.map((paragraph) => paragraph.sentences.join(paragraph.joiner)).join(PARAGRAPH_BREAK);
}
