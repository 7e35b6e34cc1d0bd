"""Persona presets (docs/en/agents.md#persona-presets): a tested description of a kind of user, in Chinese
and English, added to a simulated user's persona. `persona: {preset: NAME, text: ...}` is read here into
one persona text, in the suite's language (`suite_language`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

from evalspec.core.text import mostly_chinese

__all__ = ["PRESETS", "PresetName", "persona_text", "preset_text", "suite_language"]

PresetName = Literal["impatient", "vague", "changes_mind", "code_switch", "pushy", "elderly"]

# each preset: {lang: text}; every text says the behaviour and how it shows in a message
PRESETS: dict[PresetName, dict[str, str]] = {
    "impatient": {
        "zh": "你很没耐心：消息很短，不想听长篇解释，助手绕弯子或答非所问时会催促（“快点说重点”），"
              "两三轮得不到答案就想结束对话。",
        "en": "You are impatient: you write short messages, do not want long explanations, push the assistant "
              "(\"just get to the point\") when it stalls or answers beside the question, and want to end the "
              "chat if two or three turns bring no answer.",
    },
    "vague": {
        "zh": "你说话含糊：需求不说具体数字和型号（“差不多的就行”“便宜点的”），助手追问时才一点点补充细节，"
              "有时答非所问。",
        "en": "You are vague: you state your needs without numbers or names (\"something like that\", "
              "\"a cheaper one\"), give details only bit by bit when the assistant asks, and sometimes answer "
              "beside its question.",
    },
    "changes_mind": {
        "zh": "你会改主意：对话进行到一半时改变一个先前说过的要求（比如预算、车型或时间），"
              "并要求助手按新的要求重新回答。",
        "en": "You change your mind: partway through the chat you change one requirement you stated earlier "
              "(a budget, a model, a date) and ask the assistant to answer again for the new one.",
    },
    "code_switch": {
        "zh": "你说话中英夹杂：句子以中文为主，但常夹着英文词（比如 budget、SUV、test drive、OK），"
              "偶尔整句用英文。",
        "en": "You mix languages: you write mostly in English but drop in Chinese words and phrases (such as "
              "预算, 分期, 试驾, 好的), and now and then a whole sentence in Chinese.",
    },
    "pushy": {
        "zh": "你很强势：不断要求更低的价格、额外的优惠或例外，对助手的拒绝表示不满并再三施压"
              "（“别人都给了”“不行我就去别家”）。",
        "en": "You are pushy: you keep asking for a lower price, extra discounts or exceptions, show "
              "displeasure at a refusal and press again (\"others gave me that\", \"or I'll go elsewhere\").",
    },
    "elderly": {
        "zh": "你是一位上了年纪的用户：不熟悉网络用语和专业术语，会请助手解释缩写和术语，"
              "有时把前面说过的事情再问一遍，说话客气但慢。",
        "en": "You are an older user: you are not familiar with internet slang or technical terms, ask the "
              "assistant to explain abbreviations and jargon, sometimes ask again about something already "
              "said, and write politely and slowly.",
    },
}

PRESET_NAMES: tuple[str, ...] = get_args(PresetName)


def preset_text(name: PresetName, lang: str) -> str:
    """The preset's description in `lang` (zh or en; any other language reads the English text)."""
    texts = PRESETS[name]
    return texts.get(lang, texts["en"])


def persona_text(preset: PresetName | None, text: str, lang: str) -> str:
    """The persona the simulator is given: the written `text`, then the preset's description (alone when no
    text is written)."""
    described = preset_text(preset, lang) if preset is not None else ""
    return "\n".join(part for part in (text.strip(), described) if part)


def suite_language(declared: str | None, texts: Iterable[str]) -> str:
    """The language a suite's presets are written in: its `report: {lang}`, else that of its written texts
    (user turns, personas, goals, instructions), else English."""
    if declared in ("zh", "en"):
        return str(declared)
    return "zh" if mostly_chinese(texts) else "en"
