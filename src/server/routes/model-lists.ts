/** `GET /v1/models`: the OpenAI list shape, so SDKs can list what the gateway serves. */
export function openAiModelList(models: readonly string[]): Record<string, unknown> {
  return {
    object: 'list',
    data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'tokenwire' })),
  };
}

/** `GET /api/tags`: Ollama's shape, for Ollama clients. */
export function ollamaTags(models: readonly string[]): Record<string, unknown> {
  return {
    models: models.map((name) => ({
      name,
      model: name,
      modified_at: new Date(0).toISOString(),
      size: 0,
      digest: '',
      details: { format: 'gguf', family: 'tokenwire', parameter_size: '', quantization_level: '' },
    })),
  };
}
