"""A small rule-based car-dealer assistant, the offline system under test of the demo suites.

It answers in the user's language (Chinese or English) and has realistic flaws on purpose:
- a short memory: details fade first (the job after 3 turns, the city after 7, the name after 9);
- it invites to the showroom again when a purchase conversation goes on without an answer;
- it resolves "it"/"它" only to a car mentioned in the last few turns;
- it gives in to pressure: asked for a discount a third time, it promises one (a broken red line).
It is stateless: everything it knows comes from `messages` — so a client-side context strategy
(`history: {mode: window, turns: N}`) changes what it can remember. `respond_metered` is the same bot
reporting token usage (CJK characters and Latin words counted as tokens), for token-growth curves.
"""

from __future__ import annotations

import re
from typing import Any

MODELS = {"瑶光": "Yaoguang", "追风": "Zhuifeng", "凌云": "Lingyun"}
SPECS = {
    "瑶光": {"year": 2024, "range": 620, "price": "19.99万", "warranty": "8年16万公里电池质保"},
    "追风": {"year": 2023, "range": 510, "price": "14.59万", "warranty": "6年15万公里质保"},
    "凌云": {"year": 2025, "range": 700, "price": "25.80万", "warranty": "终身电池质保"},
}
SIGNAL = re.compile(r"分期|首付|多少钱|价格|优惠|落地|贷款|月供|price|financ|loan|discount|down payment|how much", re.I)
ACCEPT = re.compile(r"^(好的|好|可以|行|那我|我周|周[六日末]).*|.*(过去看看|到店看看|去看看|sounds good|i'll come|see you).*", re.I)
CJK = re.compile(r"[\u4e00-\u9fff]")
FORGET_AFTER = {"job_exact": 3, "job_partial": 5, "city": 7, "name": 9}
ENTITY_WINDOW = 4
ANCHOR_WINDOW = 8  # flaw: the topic of the conversation is looked for in the last 8 user turns only
TOKEN = re.compile(r"[\u4e00-\u9fff]|[A-Za-z0-9]+")
HAGGLE = re.compile(r"优惠|便宜|折扣|让利|discount|cheaper|better price", re.I)
GIVE_IN_AFTER = 3


def _zh(text: str) -> bool:
    return bool(CJK.search(text))


def _users(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m.get("role") == "user"]


def _facts(users: list[str]) -> dict[str, tuple[str, int]]:
    """Facts the user told about themselves, with the age (in user turns) of the message."""
    facts: dict[str, tuple[str, int]] = {}
    patterns = {
        "name": [r"我叫([\u4e00-\u9fff]{2,3}?)(?:[，,。在]|$)", r"(?i:my name is) ([A-Z][a-z]+)", r"I'm ([A-Z][a-z]+)\b"],
        "city": [r"在([\u4e00-\u9fff]{2,3}?)(?:做|工作|上班|生活)", r"live in ([A-Z][a-z]+)", r"\bin ([A-Z][a-z]+)\b"],
        "job": [r"做([\u4e00-\u9fff]{2,6}?)(?:[。，,]|$)", r"(?:work as|I'm) an? ([a-z]+(?: [a-z]+)?)\b"],
    }
    now = len(users)
    for index, text in enumerate(users):
        for key, options in patterns.items():
            for pattern in options:
                found = re.search(pattern, text)
                if found:
                    facts[key] = (found.group(1), now - 1 - index)
                    break
    return facts


def _recall(users: list[str], zh: bool) -> str:
    facts = _facts(users[:-1])
    parts = []
    name = facts.get("name")
    city = facts.get("city")
    job = facts.get("job")
    if name and name[1] < FORGET_AFTER["name"]:
        parts.append(f"您叫{name[0]}" if zh else f"your name is {name[0]}")
    if city and city[1] < FORGET_AFTER["city"]:
        parts.append(f"在{city[0]}市" if zh else f"you live in {city[0]}")
    if job and job[1] < FORGET_AFTER["job_exact"]:
        parts.append(f"做{job[0]}" if zh else f"you work as a {job[0]}")
    elif job and job[1] < FORGET_AFTER["job_partial"]:
        parts.append(f"好像是做{job[0][:2]}相关的" if zh else f"you work in {job[0].split()[0]}-something")
    if not parts:
        return "抱歉，我不太记得了，能再说一下吗？" if zh else "Sorry, I don't remember. Could you tell me again?"
    return ("记得，" + "，".join(parts) + "。") if zh else ("Yes: " + ", ".join(parts) + ".")


def _last_model(users: list[str], window: int) -> str | None:
    for text in reversed(users[-window:]):
        for model, english in MODELS.items():
            if model in text or english.lower() in text.lower():
                return model
    return None


def _models_in(text: str) -> list[str]:
    return [m for m, e in MODELS.items() if m in text or e.lower() in text.lower()]


def _back_to_topic(users: list[str], zh: bool, lowered: str) -> str | None:
    """Answers about the conversation itself: the car picked last, the first topic, going back to a car."""
    earlier = users[:-1]
    if re.search(r"最后决定|最终选|decided|final choice", lowered):
        picked = next((ms[-1] for text in reversed(earlier) if (ms := _models_in(text))), None)
        if picked is None:
            return "抱歉，我不记得您选了哪款车。" if zh else "Sorry, I don't remember which car you picked."
        return f"您最后决定看{picked}。" if zh else f"You settled on the {MODELS[picked]}."
    if re.search(r"回到正题|最开始|原来的话题|back on topic|first asked", lowered):
        anchor = next((ms for text in earlier[-ANCHOR_WINDOW:] if (ms := _models_in(text))), None)
        if anchor is None:
            return "我们刚才在闲聊，您想聊点什么？" if zh else "We were chatting; what would you like to talk about?"
        names = "和".join(anchor) if zh else " and ".join(MODELS[m] for m in anchor)
        return f"好的，回到正题：我们在对比{names}。" if zh else f"Back on topic: we were comparing the {names}."
    if re.search(r"回到刚才的车|back to the car", lowered):
        model = next((ms[-1] for text in reversed(earlier) if (ms := _models_in(text))), None)
        if model is None:
            return "请问您指的是哪款车型？" if zh else "Which model do you mean?"
        spec = SPECS[model]
        return f"回到{model}：{model}提供{spec['warranty']}。" if zh else \
            f"Back to the {MODELS[model]}: it comes with a long battery warranty."
    return None


def _invited(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m.get("role") == "assistant" and re.search(r"到店|试驾|test drive", m["content"]))


def _smalltalk(text: str, zh: bool) -> str | None:
    lowered = text.lower()
    table = [
        (("天气", "weather"), "今天多云转晴，适合出门。", "It's partly cloudy, nice for a walk."),
        (("笑话", "joke"), "为什么程序员分不清万圣节和圣诞节？因为 Oct 31 == Dec 25。",
         "Why do programmers mix up Halloween and Christmas? Because Oct 31 == Dec 25."),
        (("1+1",), "1+1 等于 2。", "1+1 is 2."),
        (("python",), "Python 是一种流行的编程语言。", "Python is a popular programming language."),
        (("书", "book"), "推荐《三体》。", "Try 'The Three-Body Problem'."),
        (("电影", "movie"), "推荐《流浪地球》。", "Try 'The Wandering Earth'."),
        (("米饭", "tea", "茶"), "水和米按 1.2:1，浸泡半小时再煮。", "Use water just off the boil and steep for three minutes."),
        (("周末", "weekend", "hobby"), "可以去郊外徒步。", "Hiking is a fun weekend hobby."),
        (("猫", "狗"), "猫更独立，狗更黏人，看您的时间安排。", "Cats are more independent; dogs need more time."),
        (("天空", "sky"), "因为瑞利散射，蓝光更容易被散射。", "Because of Rayleigh scattering."),
        (("诗", "poem"), "春风拂柳绿，细雨润花红。", "Spring wind in the willows, soft rain on the rose."),
    ]
    for keys, zh_answer, en_answer in table:
        if any(k in lowered for k in keys):
            return zh_answer if zh else en_answer
    return None


def respond(messages: list[dict[str, Any]], context: dict[str, Any]) -> str:
    users = _users(messages)
    text = users[-1] if users else ""
    zh = _zh(text)
    lowered = text.lower()

    if re.search(r"电话|手机号|微信|phone|wechat|链接|link|网址", lowered):
        return ("为了保护隐私，我不能提供个人联系方式或外部链接，您可以在官方 App 里预约顾问。" if zh else
                "For privacy I can't share personal contacts or links; please book an advisor in the official app.")
    if re.search(r"记得|remember", lowered):
        return _recall(users, zh)
    if re.search(r"保证|一定能|guarantee", lowered):
        return ("具体以合同和检测结果为准，我不能做口头承诺。" if zh else
                "It depends on the contract and inspection; I can't promise that.")

    if HAGGLE.search(text) and sum(1 for u in users if HAGGLE.search(u)) >= GIVE_IN_AFTER:
        # Flaw: under repeated pressure it promises a discount it has no authority to give.
        return ("好吧，看您这么有诚意，我保证再给您优惠五千元。" if zh else
                "Alright, since you insist, I guarantee you an extra 5,000 off.")

    back = _back_to_topic(users, zh, lowered)
    if back:
        return back

    model = _last_model(users, ENTITY_WINDOW)
    refers = re.search(r"它|这台|这款|那台|那款|\bit\b|this car|that car|刚才的车", lowered)
    earlier_signal = any(SIGNAL.search(u) for u in users[:-1])

    if ACCEPT.match(text.strip()) and _invited(messages):
        return "好的，已为您登记周六上午到店，到时见！" if zh else "Great, you're booked for Saturday morning. See you then!"
    if SIGNAL.search(text):
        subject = model or "这款车"
        price = SPECS[model]["price"] if model else "以门店报价为准"
        answer = (f"{subject}指导价{price}，支持分期，首付最低两成，具体需按您的资质核算。" if zh else
                  f"The {MODELS.get(subject, 'car')} starts at {price}; financing is available, subject to approval.")
        invite = "方便的话欢迎周末到店试驾，我帮您预约。" if zh else "Would you like to book a test drive this weekend?"
        return answer + invite
    if refers and model is None:
        return "请问您指的是哪款车型？瑶光、追风还是凌云？" if zh else "Which model do you mean: Yaoguang, Zhuifeng or Lingyun?"
    if model and (refers or any(m in text for m in MODELS) or any(e.lower() in lowered for e in MODELS.values())):
        spec = SPECS[model]
        if re.search(r"续航|range", lowered):
            answer = f"{model}的续航是{spec['range']}公里。" if zh else f"The {MODELS[model]} has a {spec['range']} km range."
        elif re.search(r"保修|质保|warranty", lowered):
            answer = f"{model}提供{spec['warranty']}。" if zh else f"The {MODELS[model]} comes with a long battery warranty."
        elif re.search(r"哪年|年份|year", lowered):
            answer = f"这台{model}是{spec['year']}年款。" if zh else f"This {MODELS[model]} is a {spec['year']} model."
        else:
            answer = (f"{model}是一款纯电车型，{spec['year']}年款，续航{spec['range']}公里。" if zh else
                      f"The {MODELS[model]} is a {spec['year']} electric car with a {spec['range']} km range.")
        if earlier_signal and _invited(messages) < 2:
            # Flaw: a purchase conversation that goes on without an answer gets a second invitation.
            answer += "您看这周末方便来店里试驾吗？" if zh else " Can you come for a test drive this weekend?"
        return answer
    small = _smalltalk(text, zh)
    if small:
        return small
    if re.search(r"我叫|my name|i'm", lowered):
        return "您好，很高兴认识您！有什么可以帮您？" if zh else "Nice to meet you! How can I help?"
    return "好的，还有什么可以帮您？" if zh else "Sure. Anything else I can help with?"


def _tokens(text: str) -> int:
    return len(TOKEN.findall(text))


def respond_metered(messages: list[dict[str, Any]], context: dict[str, Any]) -> dict[str, Any]:
    """`respond`, with the tokens it was sent and wrote (4 per message of overhead, as chat formats have)."""
    reply = respond(messages, context)
    prompt = sum(_tokens(str(m.get("content") or "")) + 4 for m in messages)
    completion = _tokens(reply)
    return {"content": reply, "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                        "total_tokens": prompt + completion}}
