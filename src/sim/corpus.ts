/**
 * The text the simulated model answers with. By default the answer is in the language of the prompt's
 * script (`corpusFor`): English for Latin-script prompts (with the odd accent and dash, so split-UTF-8
 * faults still have characters to split), Japanese, Russian, Arabic, Hindi or Icelandic otherwise. The
 * `multilingual` fault answers from `CORPUS` instead: short paragraphs in all those scripts and emoji,
 * including ZWJ sequences, flags and skin tones, so every answer crosses multi-byte characters and
 * tokens that end inside one. Written for this project. Answers start at a sentence and run on through
 * the paragraphs, wrapping around. An English prompt that mentions a list, code or a table is answered
 * in Markdown with those blocks (`markdownLanguage`), so a page that renders Markdown has some to show.
 */
export interface CorpusParagraph {
  readonly sentences: readonly string[];
  /** What joins two sentences of this paragraph (a space, or nothing in Japanese). */
  readonly joiner: string;
}

/** Paragraphs are joined by a blank line. */
export const PARAGRAPH_BREAK = '\n\n';

/** Every script at once, with emoji: what the `multilingual` fault answers from. */
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
      'A careless one stops mid-sentence and leaves the reader guessing whether anything is missing. 🤔',
    ],
  },
];

/** What a Latin-script prompt is answered with. */
export const ENGLISH_CORPUS: readonly CorpusParagraph[] = [
  {
    joiner: ' ',
    sentences: [
      'A river does not arrive all at once.',
      'It begins as a trickle high in the hills, gathers into a stream, and becomes a current that carries whatever it meets toward the sea.',
      'Along the way it bends around rocks, slows in the flat meadows, and speeds up again where the valley narrows.',
    ],
  },
  {
    joiner: ' ',
    sentences: [
      'Rain and melting snow feed the small streams first.',
      'Those streams join one another, and each junction makes the water a little deeper and a little wider.',
      'By the time the river reaches the coast, it holds the water of thousands of hillsides.',
    ],
  },
  {
    joiner: ' ',
    sentences: [
      'Near the mouth, the river slows down and drops the sand and silt it has carried — that is how a delta grows.',
      'Fresh water meets salt water there, and the tide pushes back twice a day.',
    ],
  },
  {
    joiner: ' ',
    sentences: [
      'Reading an answer token by token feels much the same: each piece is small, yet together they make a sentence.',
      'A good client keeps every piece, even the accents in café, naïve and Reykjavík.',
    ],
  },
  {
    joiner: ' ',
    sentences: [
      'A good server sends its last event and then closes the connection.',
      'A careless one stops mid-sentence and leaves the reader guessing whether anything is missing.',
      'That is why the last event matters as much as the first.',
    ],
  },
  {
    joiner: ' ',
    sentences: [
      'In short: water flows downhill, the streams merge, and the sea is where they all end up.',
      'The journey can take days or months, depending on the length of the river and the weather along its course.',
    ],
  },
];

/** What a prompt in another script is answered with, by language. */
const SCRIPT_CORPORA: Readonly<
  Record<Exclude<CorpusLanguage, 'en' | 'multilingual' | MarkdownLanguage>, readonly CorpusParagraph[]>
> = {
  is: [
    {
      joiner: ' ',
      sentences: [
        'Á Íslandi renna jökulárnar hratt til sjávar.',
        'Þær bera með sér sand og ís, og vatnið er kalt allt árið.',
        'Áin byrjar sem lítill lækur uppi á heiði og verður að stórri elfu áður en hún nær ströndinni.',
      ],
    },
  ],
  ja: [
    {
      joiner: '',
      sentences: [
        '川はゆっくりと海へ流れていきます。',
        '山に降った雨が小さな流れになり、やがて大きな川になります。',
        '小さな言葉が一つずつ届き、やがて長い文章になります。',
      ],
    },
  ],
  ru: [
    {
      joiner: ' ',
      sentences: [
        'Река не спешит, но всегда находит дорогу к морю.',
        'Дождь и талый снег питают ручьи, а ручьи сливаются в реку.',
        'Каждое слово приходит отдельно, и только вместе они складываются в ответ.',
      ],
    },
  ],
  ar: [
    {
      joiner: ' ',
      sentences: [
        'النهر لا يتوقف أبدًا، بل يجري نحو البحر قطرة بعد قطرة.',
        'تجتمع الجداول الصغيرة فتصير نهرًا كبيرًا.',
        'وكذلك الجواب يصل كلمة بعد كلمة.',
      ],
    },
  ],
  hi: [
    {
      joiner: ' ',
      sentences: [
        'नदी धीरे-धीरे समुद्र की ओर बहती है।',
        'बारिश का पानी छोटी धाराओं में मिलकर बड़ी नदी बनता है।',
        'हर शब्द अलग से आता है।',
      ],
    },
  ],
};

/** The Markdown blocks an English answer can hold when the prompt asks for them. */
export type MarkdownBlock = 'list' | 'code' | 'table';

/**
 * An English answer in Markdown, with the blocks the prompt asked for, in this order: `md-list`,
 * `md-code`, `md-list-code`, … (see `markdownLanguage`).
 */
export type MarkdownLanguage = `md-${string}`;

/** The language an answer is written in: one per script, every script at once, or English Markdown. */
export type CorpusLanguage = 'en' | 'is' | 'ja' | 'ru' | 'ar' | 'hi' | 'multilingual' | MarkdownLanguage;

/** The order blocks appear in an answer, and the words in a prompt that ask for each. */
const MARKDOWN_BLOCKS: readonly [MarkdownBlock, RegExp][] = [
  ['list', /\blists?\b/i],
  ['code', /\bcode\b/i],
  ['table', /\btables?\b/i],
];

/**
 * The Markdown answer's parts. The whole answer is one corpus "sentence", so it always starts at its
 * first line (a code fence is never entered halfway), and its length, 120 to 200 tokens whatever the
 * blocks asked for (prose fills in around fewer blocks), makes the simulator send it once and whole
 * under its default output cap.
 */
const MARKDOWN_TEXT: Readonly<Record<MarkdownBlock, string>> = {
  list: [
    '1. Rain and snow feed small streams.',
    '2. Streams join and grow deeper.',
    '3. The river slows and drops its sand.',
    '4. At the coast, a delta grows.',
    '',
    '- sand and silt',
    '- fallen leaves',
    '- the rain of many hills',
  ].join('\n'),
  code: [
    '```ts',
    'const tokens = stream({ url, request });',
    'for await (const event of tokens) {',
    "  if (event.type === 'text') write(event.text);",
    '}',
    '```',
  ].join('\n'),
  table: [
    '| Stage | Where | Pace |',
    '| --- | --- | --- |',
    '| Trickle | hills | slow |',
    '| Stream | valleys | quick |',
    '| Current | plains | steady |',
    '| Delta | coast | slow |',
  ].join('\n'),
};

const MARKDOWN_PROSE = {
  intro: 'Here is how a river reaches the sea, written out the way you asked.',
  /** Around one or two blocks. */
  more: 'A river does not arrive all at once: it begins as a trickle high in the hills, gathers into a stream, and becomes a current that carries whatever it meets toward the sea.',
  /** Around one block. */
  most: 'The journey can take days or months, depending on the length of the river and the weather along its course.',
  outro: 'In short: water flows downhill, the streams merge, and the sea is where they all end up.',
};

/** The Markdown language a Latin-script prompt asks for (`md-list-code`), or undefined for prose. */
export function markdownLanguage(prompt: string): MarkdownLanguage | undefined {
  const blocks = MARKDOWN_BLOCKS.filter(([, pattern]) => pattern.test(prompt)).map(([block]) => block);
  return blocks.length === 0 ? undefined : `md-${blocks.join('-')}`;
}

function markdownCorpus(language: MarkdownLanguage): readonly CorpusParagraph[] {
  const asked = language.slice(3).split('-');
  const blocks = MARKDOWN_BLOCKS.map(([block]) => block).filter((block) => asked.includes(block));
  const parts = [MARKDOWN_PROSE.intro];
  if (blocks.length <= 2) parts.push(MARKDOWN_PROSE.more);
  if (blocks.length <= 1) parts.push(MARKDOWN_PROSE.most);
  parts.push(...blocks.map((block) => MARKDOWN_TEXT[block]), MARKDOWN_PROSE.outro);
  return [{ joiner: ' ', sentences: [parts.join(PARAGRAPH_BREAK)] }];
}

/** The paragraphs answers in `language` are made of. */
export function corpusFor(language: CorpusLanguage): readonly CorpusParagraph[] {
  if (language === 'multilingual') return CORPUS;
  if (language === 'en') return ENGLISH_CORPUS;
  if (language.startsWith('md-')) return markdownCorpus(language as MarkdownLanguage);
  return SCRIPT_CORPORA[language as Exclude<CorpusLanguage, 'en' | 'multilingual' | MarkdownLanguage>];
}

const SCRIPTS: readonly [CorpusLanguage, RegExp][] = [
  ['ja', /[\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Han}]/gu],
  ['ru', /\p{Script=Cyrillic}/gu],
  ['ar', /\p{Script=Arabic}/gu],
  ['hi', /\p{Script=Devanagari}/gu],
];

/**
 * The language to answer `prompt` in: the script most of its letters are written in (Japanese for
 * kana and kanji, Russian for Cyrillic, Arabic, Hindi for Devanagari), Icelandic for Latin text with
 * þ or ð, else English (in Markdown when it asks for a list, code or a table).
 */
export function languageOf(prompt: string): CorpusLanguage {
  const latin = prompt.match(/\p{Script=Latin}/gu)?.length ?? 0;
  let best: CorpusLanguage = 'en';
  let most = latin;
  for (const [language, pattern] of SCRIPTS) {
    const count = prompt.match(pattern)?.length ?? 0;
    if (count > most) {
      best = language;
      most = count;
    }
  }
  if (best === 'en' && /[þðÞÐ]/u.test(prompt)) return 'is';
  // An English prompt that asks for a list, code or a table is answered in Markdown.
  if (best === 'en') return markdownLanguage(prompt) ?? 'en';
  return best;
}

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

/** A corpus as one text, as answers read it (answers wrap around at the end); default: `CORPUS`. */
export function corpusText(language: CorpusLanguage = 'multilingual'): string {
  return corpusFor(language)
    .map((paragraph) => paragraph.sentences.join(paragraph.joiner))
    .join(PARAGRAPH_BREAK);
}
