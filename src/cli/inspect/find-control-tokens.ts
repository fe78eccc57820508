/**
 * Control tokens that leak into text when a server decodes special tokens or its chat template's
 * stop token is wrong: Llama 3 (`<|eot_id|>`, `<|end_of_text|>`, `<|start_header_id|>`), ChatML /
 * Qwen (`<|im_end|>`, `<|im_start|>`), GPT-2 family (`<|endoftext|>`), Phi (`<|end|>`), DeepSeek's
 * full-width bars (`<｜end▁of▁sentence｜>`), Llama 2 / Mistral (`</s>`, `[INST]`), Gemma
 * (`<end_of_turn>`, `<start_of_turn>`, `<eos>`).
 */
const CONTROL_TOKEN =
  /<[|｜][A-Za-z0-9_▁.:-]{1,40}[|｜]>|<\/s>|\[\/?INST\]|<\/?(?:end_of_turn|start_of_turn|eos|bos)>/g;

export interface ControlTokenHit {
  token: string;
  count: number;
  /** Character offset of the first occurrence in the text. */
  firstAt: number;
}

/** The control tokens found in a text, most frequent first. */
export function findControlTokens(text: string): ControlTokenHit[] {
  const hits = new Map<string, ControlTokenHit>();
  for (const match of text.matchAll(CONTROL_TOKEN)) {
    const token = match[0];
    const hit = hits.get(token);
    if (hit === undefined) hits.set(token, { token, count: 1, firstAt: match.index });
    else hit.count += 1;
  }
  return [...hits.values()].sort((a, b) => b.count - a.count || a.firstAt - b.firstAt);
}
