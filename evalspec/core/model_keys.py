"""Model strings as litellm writes them (`PROVIDER/NAME`) and where each provider's key lives in the
environment: read by the model provider (a missing key is a preflight error) and by redaction (a key
taken from the environment is a secret of the run), so it sits in `base`."""

from __future__ import annotations

KEY_ENV = {
    "openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY", "groq": "GROQ_API_KEY", "deepseek": "DEEPSEEK_API_KEY",
    "azure": "AZURE_API_KEY", "together_ai": "TOGETHERAI_API_KEY", "openrouter": "OPENROUTER_API_KEY",
    "cohere": "COHERE_API_KEY", "xai": "XAI_API_KEY", "fireworks_ai": "FIREWORKS_AI_API_KEY",
    "dashscope": "DASHSCOPE_API_KEY", "moonshot": "MOONSHOT_API_KEY", "zai": "ZAI_API_KEY",
}
NO_KEY = {"ollama", "ollama_chat", "vllm", "hosted_vllm", "lm_studio", "llamafile", "huggingface"}


def split_model(model: str) -> tuple[str, str]:
    """`openai/gpt-4o-mini` -> ("openai", "gpt-4o-mini"); an unprefixed name is OpenAI's."""
    prefix, sep, name = model.partition("/")
    return (prefix, name) if sep else ("openai", model)
