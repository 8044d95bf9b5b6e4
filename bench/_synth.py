"""Synthetic vaults and queries for the benchmarks: deterministic for a seed, fast at 100k notes.

`make_vault(path, n_notes, seed)` lays out a vault with `Vault.init`, writes ~200 entity notes
(people, companies, projects, servers with Chinese and English aliases) and n memory notes
written straight to disk (no `remember()`): about 45% Chinese, 45% English, 10% mixed, one to
three sentences each, ids like CT2024-0876 / INV-2024-001 / ERR_4031, 2-5 tags from ~300, 1-3
wikilinks to entities, timestamps over the year before REFERENCE_END. About 2% of the memories
sit in inbox/ (candidates) and 2% in archive/.

`make_queries(n, seed, ids)` draws a query mix from the same pools: ~40% text only, ~30% tags
only, ~30% text and one tag. Pass ids (e.g. `make_vault(...)["ids"]`) for queries naming an id
that exists; without them an id query is a well-formed id that may not exist.
"""

from __future__ import annotations

import datetime as dt
import random
import time
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import NamedTuple

from vaultmem import Vault

REFERENCE_END = dt.datetime(2026, 11, 29, 18, 0, tzinfo=dt.timezone.utc)
"""Notes are timestamped over the 365 days before this instant."""

_YEAR_S = 365 * 86400
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_ZH_TZ = dt.timezone(dt.timedelta(hours=8))
_EN_TZS = (dt.timezone.utc, dt.timezone(dt.timedelta(hours=-5)), dt.timezone(dt.timedelta(hours=1)))
_ID_SAMPLE = 2000  # ids kept by make_vault for id queries

# -- name pools: (Chinese, English) pairs --------------------------------------------------------
_SURNAMES = [("张", "Zhang"), ("李", "Li"), ("王", "Wang"), ("刘", "Liu"), ("陈", "Chen"), ("杨", "Yang"),
             ("赵", "Zhao"), ("黄", "Huang"), ("周", "Zhou"), ("吴", "Wu"), ("徐", "Xu"), ("孙", "Sun"),
             ("胡", "Hu"), ("朱", "Zhu"), ("高", "Gao"), ("林", "Lin"), ("何", "He"), ("郭", "Guo"),
             ("马", "Ma"), ("罗", "Luo")]
_GIVEN = [("伟", "Wei"), ("芳", "Fang"), ("娜", "Na"), ("敏", "Min"), ("静", "Jing"), ("磊", "Lei"),
          ("洋", "Yang"), ("勇", "Yong"), ("军", "Jun"), ("杰", "Jie"), ("涛", "Tao"), ("明", "Ming"),
          ("超", "Chao"), ("秀英", "Xiuying"), ("华", "Hua"), ("平", "Ping"), ("刚", "Gang"), ("丽", "Li"),
          ("强", "Qiang"), ("晓东", "Xiaodong"), ("海燕", "Haiyan"), ("建国", "Jianguo"), ("雪", "Xue")]
_FIRST = [("Emily", "艾米丽"), ("James", "詹姆斯"), ("Olivia", "奥利维亚"), ("Michael", "迈克尔"),
          ("Sophia", "索菲亚"), ("David", "大卫"), ("Emma", "艾玛"), ("Daniel", "丹尼尔"), ("Grace", "格蕾丝"),
          ("Lucas", "卢卡斯"), ("Chloe", "克洛伊"), ("Henry", "亨利"), ("Anna", "安娜"), ("Jack", "杰克"),
          ("Mia", "米娅"), ("Noah", "诺亚"), ("Lily", "莉莉"), ("Ethan", "伊桑"), ("Ava", "艾娃"),
          ("Oscar", "奥斯卡")]
_LAST = [("Carter", "卡特"), ("Smith", "史密斯"), ("Brown", "布朗"), ("Miller", "米勒"), ("Davis", "戴维斯"),
         ("Wilson", "威尔逊"), ("Taylor", "泰勒"), ("Clark", "克拉克"), ("Lewis", "刘易斯"),
         ("Walker", "沃克"), ("Young", "杨格"), ("King", "金"), ("Wright", "赖特"), ("Scott", "斯科特"),
         ("Green", "格林"), ("Baker", "贝克"), ("Adams", "亚当斯"), ("Nelson", "纳尔逊"), ("Hill", "希尔")]
_BRANDS = [("星河", "Xinghe"), ("云帆", "Yunfan"), ("蓝海", "Lanhai"), ("天启", "Tianqi"), ("华信", "Huaxin"),
           ("中联", "Zhonglian"), ("金石", "Jinshi"), ("远航", "Yuanhang"), ("青松", "Qingsong"),
           ("明德", "Mingde"), ("恒泰", "Hengtai"), ("博远", "Boyuan"), ("启明", "Qiming"), ("鼎盛", "Dingsheng"),
           ("瑞丰", "Ruifeng"), ("北辰", "Beichen"), ("长风", "Changfeng"), ("银杏", "Yinxing"),
           ("海川", "Haichuan"), ("万象", "Wanxiang"), ("东方", "Dongfang"), ("紫金", "Zijin")]
_TRADES = [("科技", "Tech"), ("物流", "Logistics"), ("软件", "Software"), ("医疗", "Health"),
           ("金融", "Finance"), ("传媒", "Media"), ("零售", "Retail"), ("能源", "Energy")]
_CODENAMES = [("Atlas", "阿特拉斯"), ("Phoenix", "凤凰"), ("Orion", "猎户座"), ("Apollo", "阿波罗"),
              ("Nova", "新星"), ("Titan", "泰坦"), ("Hermes", "赫尔墨斯"), ("Zephyr", "西风"),
              ("Aurora", "极光"), ("Falcon", "猎鹰"), ("Mercury", "水星"), ("Neptune", "海王星"),
              ("Polaris", "北极星"), ("Vega", "织女星"), ("Comet", "彗星"), ("Everest", "珠峰"),
              ("Lotus", "莲花"), ("Dragon", "神龙"), ("Helix", "螺旋"), ("Quasar", "类星体")]
_AREAS = [("数据平台", "Data Platform"), ("计费系统", "Billing"), ("移动端", "Mobile"), ("风控", "Risk Engine"),
          ("客服中台", "Support Hub"), ("搜索", "Search")]
_SERVER_ROLES = [("db", "数据库"), ("api", "接口服务器"), ("cache", "缓存节点"), ("worker", "任务节点"),
                 ("gateway", "网关"), ("k8s-node", "集群节点")]
_ENVS = [("prod", "生产"), ("staging", "预发"), ("dev", "开发")]

# -- vocabulary pools ----------------------------------------------------------------------------
_ZH_TOPICS = """合同续签 付款方式 发票审批 报销流程 预算调整 年度审计 季度复盘 上线计划 灰度发布 回滚方案 数据迁移
连接池 慢查询 索引优化 缓存穿透 消息队列 日志采集 监控告警 容量规划 压测报告 安全评审 权限申请 证书续期
域名备案 备份策略 灾备演练 接口限流 签名校验 支付回调 对账差异 退款申请 客户投诉 需求评审 原型设计 交互稿
验收清单 培训计划 招聘面试 绩效评估 团建活动 差旅安排 会议纪要 周报模板 知识库 值班表 工单系统 版本规划
技术选型 架构评审 代码规范 单元测试 集成测试 性能瓶颈 内存泄漏 磁盘告警 网络抖动 配置中心 密钥轮换 数据脱敏
隐私合规 采购流程 供应商评估 报价单 框架协议 服务等级 续费提醒 用户画像 埋点方案 报表口径 增长实验 渠道合作
直播活动 市场推广 品牌设计 官网改版 客户成功 续约风险 流失预警 工作交接 离职手续 入职材料 办公用品 年终总结""".split()
_ZH_VERBS = """确认 跟进 补充 整理 更新 核对 提交 评审 推进 归档 催办 协调 排查 修复 复盘 同步 上报 汇总""".split()
_ZH_RESULTS = """已经解决 下周再议 需要老板拍板 先搁置 按原计划执行 改为线上处理 等待客户回复 由财务跟进 延期一周
风险可控 需要补充材料 已同步给团队 周五前完成 优先级调高 暂不处理 另开工单跟踪""".split()
_ZH_PREFS = """早上开会 简洁的回答 表格对比 深色模式 先看结论 微信沟通 邮件确认 周一汇报 不喝咖啡 喝绿茶 靠窗座位
高铁出行 提前一天提醒 中文文档 语音会议 详细的日志 周末不打扰 异步沟通""".split()
_EN_ADJ = """urgent quarterly annual monthly weekly critical minor legacy new internal external shared private
manual automated slow fast stale flaky broken pending overdue approved rejected draft final signed unpaid
partial duplicate missing encrypted public regional global mobile primary secondary backup nightly staging
production experimental deprecated upcoming recurring temporary permanent detailed concise async remote""".split()
_EN_NOUNS = """contract invoice budget forecast deadline roadmap milestone release rollout rollback migration
database schema index query cache queue worker cluster node gateway certificate domain backup snapshot
alert dashboard metric latency throughput outage incident postmortem runbook ticket review audit policy
permission token password secret credential vendor supplier quote proposal renewal refund payment
reconciliation statement report summary agenda meeting workshop interview onboarding offboarding training
laptop license subscription plan pricing discount customer partner stakeholder sponsor feature bug patch
hotfix regression test pipeline build deploy config flag experiment survey feedback complaint escalation
SLA SSO OIDC webhook endpoint API SDK CLI frontend backend design mockup prototype spec requirement
document wiki template checklist calendar timezone travel flight hotel visa expense receipt reimbursement
payroll headcount hiring offer contractor freelancer warehouse shipment inventory order delivery carrier
campaign launch newsletter landing brand logo analytics funnel retention churn cohort segment""".split()
_EN_VERBS = """review approve sign renew pay refund migrate deploy rollback patch rotate archive audit escalate
schedule reschedule cancel confirm document benchmark monitor investigate reproduce triage update share
export import reconcile forecast estimate prioritise""".split()
_EN_PREFS = ["concise answers", "tables for comparisons", "dark mode", "morning meetings", "async reviews",
             "green tea", "Slack over email", "bullet-point summaries", "a weekly digest", "no calls on Friday",
             "metric units", "24-hour time", "vim keybindings", "window seats", "early reminders", "detailed logs",
             "written agendas", "short standups"]
_ERRORS = [("ERR_4031", "签名过期", "signature expired"), ("ERR_4032", "令牌无效", "invalid token"),
           ("ERR_4290", "请求过于频繁", "rate limited"), ("ERR_5002", "支付回调超时", "payment callback timeout"),
           ("ERR_5031", "上游服务不可用", "upstream unavailable"), ("ERR_5040", "网关超时", "gateway timeout"),
           ("ERR_4004", "资源不存在", "resource not found"), ("ERR_5005", "数据库连接池耗尽", "DB pool exhausted"),
           ("ERR_4100", "参数校验失败", "validation failed"), ("ERR_5070", "磁盘空间不足", "disk full")]
_SOURCES = ["hermes", "finance-bot", "ops-bot", "user", "crm-sync", "calendar-sync", "import:slack",
            "import:email", "support-bot", "planner"]
_LIFECYCLES = ["task", "note", "event", "preference", "fact", "permanent"]
_BASE_TAGS = """contract invoice finance payment ops deploy incident alert database security meeting weekly
preference travel hr hiring budget customer vendor support billing infra k8s network release qa design
product marketing legal compliance audit planning roadmap todo followup urgent blocked idea lesson decision
postmortem oncall backup cert dns api mobile frontend backend data analytics growth sales renewal refund
q1 q2 q3 q4 2025 2026 合同 发票 付款 运维 部署 事故 告警 会议 周会 偏好 出差 招聘 预算 客户 供应商
安全 发布 设计 复盘 待办 决策 经验 docs wiki onboarding training expense travel-plan visa hotel flight
pricing discount partner campaign newsletter brand seo survey feedback churn retention cohort experiment
migration schema cache queue latency capacity loadtest monitoring logging tracing sso oidc secrets tls
privacy gdpr procurement quote sla escalation complaint ux mockup prototype spec review standup retro
合规 采购 报价 培训 入职 报销 监控 日志 容量 压测 迁移 缓存 网络 证书 权限 数据 需求 验收 上线 回滚""".split()
_ZH_PHRASES = ["合同编号", "发票金额", "付款方式", "连接池耗尽", "部署窗口", "报错", "会议纪要", "周会", "截止日期",
               "最近的部署", "上次的会议", "签名过期", "续签合同", "灰度发布", "证书续期", "对账差异", "值班表"]
_EN_PHRASES = ["invoice overdue", "deploy window", "database migration", "contract renewal", "payment received",
               "gateway timeout", "latest incident", "weekly sync notes", "prefers concise answers",
               "rollback plan", "certificate expires", "budget approved", "postmortem action items"]


@dataclass(frozen=True)
class Entity:
    """An entity note: its title (the link target), aliases, kind and tag."""

    title: str
    aliases: tuple[str, ...]
    kind: str
    tag: str


class Draft(NamedTuple):
    """One memory before it is written: its fields and the entity it is mainly about."""

    title: str
    body: str
    type: str
    value: str
    tags: list[str]
    lifecycle: str
    main: Entity


def build_entities(seed: int = 0) -> list[Entity]:
    """About 200 entities: 40 Chinese and 40 English people, 50 companies, 40 projects, 30 servers."""
    rng = random.Random(f"entities-{seed}")
    zh = rng.sample([(s + g, sp + " " + gp, s, sp) for s, sp in _SURNAMES for g, gp in _GIVEN], 40)
    people = [Entity(name, (f"老{s}", pinyin), "person", "client_" + pinyin.lower().replace(" ", ""))
              for name, pinyin, s, sp in zh]
    en = rng.sample([(f, fz, l, lz) for f, fz in _FIRST for l, lz in _LAST], 40)
    people += [Entity(f"{f} {l}", (f, f"{fz}·{lz}"), "person", f"client_{f}_{l}".lower()) for f, fz, l, lz in en]
    firms = rng.sample([(b, bp, t, tp) for b, bp in _BRANDS for t, tp in _TRADES], 50)
    companies = [Entity(b + t, (f"{bp} {tp}", b), "company", f"{bp}_{tp}".lower()) for b, bp, t, tp in firms]
    projects = [Entity(f"Project {c}", (f"{cz}项目", c), "project", "project_" + c.lower()) for c, cz in _CODENAMES]
    areas = rng.sample([(c, cz, a, az) for c, cz in _CODENAMES for a, az in _AREAS], 20)
    projects += [Entity(f"{c} {ae}", (cz + az, f"{c} {ae}".replace(" ", "-")), "project", "project_" + c.lower())
                 for c, cz, az, ae in areas]
    hosts = rng.sample([(e, ez, r, rz, n) for e, ez in _ENVS for r, rz in _SERVER_ROLES for n in range(1, 9)], 30)
    servers = [Entity(f"{e}-{r}-{n:02d}", (f"{ez}{rz}{n}号", f"{e} {r} {n}"), "server", r.split("-")[0])
               for e, ez, r, rz, n in hosts]
    return people + companies + projects + servers


def tag_pool(entities: list[Entity]) -> list[str]:
    """About 300 distinct tags: topic tags, Chinese tags and one per customer, company, project."""
    pool = list(dict.fromkeys(_BASE_TAGS + [e.tag for e in entities]))
    return pool[:300]


class _Writer:
    """Draws one memory at a time from the pools with a shared random.Random."""

    def __init__(self, rng: random.Random, entities: list[Entity]):
        self.r = rng
        self.entities = entities
        kinds = ("person", "company", "project", "server")
        self.by_kind = {kind: [e for e in entities if e.kind == kind] for kind in kinds}
        self.tags = tag_pool(entities)
        self.tag_weights = list(accumulate(1.0 / (i + 1) ** 0.8 for i in range(len(self.tags))))
        self.families = [self._contract, self._invoice, self._error, self._preference, self._meeting,
                         self._milestone, self._task]

    # -- small draws ---------------------------------------------------------------------------
    def pick(self, kind: str) -> Entity:
        """A random entity of a kind."""
        return self.r.choice(self.by_kind[kind])

    def date(self) -> dt.date:
        """A date within the year around REFERENCE_END."""
        return (REFERENCE_END - dt.timedelta(days=self.r.randint(-60, 330))).date()

    def zh_date(self) -> str:
        """A date as Chinese text."""
        d = self.date()
        return f"{d.year}年{d.month}月{d.day}日"

    def en_date(self) -> str:
        """A date as English text (ISO or 'Nov 15')."""
        d = self.date()
        return d.isoformat() if self.r.random() < 0.5 else d.strftime("%b %d").replace(" 0", " ")

    def amount(self, zh: bool) -> str:
        """A money amount."""
        n = self.r.randint(5, 9000) * 100
        return f"{n:,} 元" if zh else f"${n:,}"

    def word_phrase(self) -> str:
        """An English adjective-noun phrase."""
        return f"{self.r.choice(_EN_ADJ)} {self.r.choice(_EN_NOUNS)}"

    def ticket(self) -> str:
        """A ticket number like OPS-4821."""
        return f"{self.r.choice(('OPS', 'FIN', 'SUP', 'DEV', 'SEC'))}-{self.r.randint(100, 99999)}"

    def extra_tags(self, k: int) -> list[str]:
        """k tags drawn with a Zipf-like skew (a few common tags, a long tail)."""
        return self.r.choices(self.tags, cum_weights=self.tag_weights, k=k)

    # -- memory families: each returns a Draft in Chinese (zh) or English -------------------
    def _contract(self, zh: bool) -> Draft:
        """A customer's contract number and its date."""
        who = self.pick("person")
        ct = f"CT{self.r.randint(2023, 2026)}-{self.r.randint(0, 9999):04d}"
        if zh:
            body = f"客户 [[{who.title}]] 的合同编号是 {ct}，截止日期 {self.zh_date()}，{self.r.choice(_ZH_RESULTS)}。"
            return Draft(f"{who.title}合同编号 {ct}", body, "contract_id", ct, ["contract", "合同", who.tag], "fact", who)
        body = (f"Contract {ct} with [[{who.title}]] renews on {self.en_date()}; "
                f"{self.r.choice(_EN_VERBS)} the {self.word_phrase()} first.")
        return Draft(f"Contract {ct} with {who.title}", body, "contract_id", ct, ["contract", who.tag], "fact", who)

    def _invoice(self, zh: bool) -> Draft:
        """An invoice number, amount and due date for a company."""
        firm = self.pick("company")
        inv = f"INV-{self.r.randint(2024, 2026)}-{self.r.randint(1, 9999):03d}"
        if zh:
            body = f"[[{firm.title}]] 的发票 {inv} 金额 {self.amount(True)}，{self.r.choice(_ZH_RESULTS)}。"
            return Draft(f"{firm.title}发票 {inv}", body, "invoice", inv, ["invoice", "发票", firm.tag], "fact", firm)
        body = f"Invoice {inv} for {self.amount(False)} sent to [[{firm.title}]], due {self.en_date()}."
        return Draft(f"Invoice {inv} to {firm.title}", body, "invoice", inv, ["invoice", "finance", firm.tag], "fact",
                     firm)

    def _error(self, zh: bool) -> Draft:
        """An error code on a server, with its ticket."""
        host = self.pick("server")
        code, desc_zh, desc_en = self.r.choice(_ERRORS)
        tk = self.ticket()
        if zh:
            body = (f"[[{host.title}]] 报错 {code}：{desc_zh}，"
                    f"{self.r.choice(_ZH_VERBS)}{self.r.choice(_ZH_TOPICS)}后恢复，工单 {tk}。")
            return Draft(f"{host.title} {code} {desc_zh} {tk}", body, "error", code, ["incident", "告警", host.tag],
                         "event", host)
        body = f"[[{host.title}]] threw {code} ({desc_en}) during the {self.word_phrase()}; tracked in {tk}."
        return Draft(f"{host.title} {code} {tk}", body, "error", code, ["incident", "ops", host.tag], "event", host)

    def _preference(self, zh: bool) -> Draft:
        """What a person prefers."""
        who = self.pick("person")
        if zh:
            pref = self.r.choice(_ZH_PREFS)
            body = f"[[{who.title}]] 喜欢{pref}，{self.r.choice(_ZH_TOPICS)}的事情先{self.r.choice(_ZH_VERBS)}。"
            return Draft(f"{who.title}喜欢{pref}", body, "preference", "", ["preference", "偏好"], "preference", who)
        pref = self.r.choice(_EN_PREFS)
        body = f"[[{who.title}]] prefers {pref}, especially for the {self.word_phrase()}."
        return Draft(f"{who.title} prefers {pref}", body, "preference", "", ["preference"], "preference", who)

    def _meeting(self, zh: bool) -> Draft:
        """A meeting with a person and what came of it."""
        who = self.pick("person")
        if zh:
            topic = self.r.choice(_ZH_TOPICS)
            body = f"{self.zh_date()}与 [[{who.title}]] 开会讨论{topic}，结论是{self.r.choice(_ZH_RESULTS)}。"
            return Draft(f"与{who.title}讨论{topic}", body, "meeting", "", ["meeting", "会议"], "event", who)
        topic = self.word_phrase()
        body = (f"Met [[{who.title}]] on {self.en_date()} about the {topic}: "
                f"{self.r.choice(_EN_VERBS)} it by {self.en_date()}.")
        return Draft(f"Met {who.title} about {topic}", body, "meeting", "", ["meeting", "weekly"], "event", who)

    def _milestone(self, zh: bool) -> Draft:
        """A project milestone with its owner."""
        proj, who = self.pick("project"), self.pick("person")
        if zh:
            topic = self.r.choice(_ZH_TOPICS)
            body = f"[[{proj.title}]] 的{topic}定在 {self.zh_date()}，负责人 [[{who.title}]]。"
            return Draft(f"{proj.title} {topic}", body, "decision", "", ["planning", proj.tag], "fact", proj)
        topic = self.word_phrase()
        body = f"[[{proj.title}]] {topic} is due {self.en_date()}; owner [[{who.title}]]."
        return Draft(f"{proj.title} {topic} due", body, "decision", "", ["planning", proj.tag], "fact", proj)

    def _task(self, zh: bool) -> Draft:
        """A to-do with a date."""
        who = self.pick("person")
        if zh:
            topic = self.r.choice(_ZH_TOPICS)
            body = f"提醒：{self.zh_date()}前{self.r.choice(_ZH_VERBS)}{topic}，完成后告诉 [[{who.title}]]。"
            return Draft(f"{self.r.choice(_ZH_VERBS)}{topic}", body, "task", "", ["todo", "待办"], "task", who)
        verb, topic = self.r.choice(_EN_VERBS), self.word_phrase()
        body = f"TODO: {verb} the {topic} before {self.en_date()} and ping [[{who.title}]]."
        return Draft(f"{verb.capitalize()} the {topic}", body, "task", "", ["todo", "followup"], "task", who)

    # -- fillers -------------------------------------------------------------------------------
    def filler(self, zh: bool, link: Entity | None) -> str:
        """One more sentence; it carries the extra wikilink when given one."""
        if link is not None:
            return (f"相关：[[{link.title}]]。" if zh and self.r.random() < 0.5 else f"See also [[{link.title}]].")
        if zh:
            return self.r.choice((
                f"{self.r.choice(_ZH_TOPICS)}方面需要{self.r.choice(_ZH_VERBS)}。",
                f"预算约 {self.amount(True)}，相关工单 {self.ticket()}。",
                f"下次{self.r.choice(_ZH_TOPICS)}之前要{self.r.choice(_ZH_VERBS)}。",
            ))
        return self.r.choice((
            f"Remember to {self.r.choice(_EN_VERBS)} the {self.word_phrase()} before {self.en_date()}.",
            f"Budget is about {self.amount(False)}, see {self.ticket()}.",
            f"The {self.word_phrase()} needs a {self.r.choice(_EN_NOUNS)} review.",
        ))

    def memory(self) -> tuple[Draft, bool]:
        """One memory (1-3 sentences, 1-3 links, 2-5 tags) and whether it is mainly Chinese."""
        roll = self.r.random()
        zh = roll < 0.45
        draft = self.r.choice(self.families)(zh)
        sentences = [draft.body]
        room = 3 - draft.body.count("[[")
        for link in self.r.sample(self.entities, self.r.randint(0, room)):
            if link is not draft.main:
                sentences.append(self.filler(zh, link))
        if roll >= 0.9:  # mixed: a sentence in the other language
            sentences.append(self.filler(not zh, None))
        elif len(sentences) < 3 and self.r.random() < 0.5:
            sentences.append(self.filler(zh, None))
        tags = list(dict.fromkeys(draft.tags + self.extra_tags(self.r.randint(0, 3))))[:5]
        if len(tags) < 2:
            tags.append(self.r.choice(self.tags[:60]))
        return draft._replace(body=("" if zh else " ").join(sentences), tags=tags), zh


def _ulid(ms: int, rnd: int) -> str:
    """A ULID from a millisecond time and 80 random bits (Crockford base32, 26 characters)."""
    value = (ms << 80) | rnd
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def _yaml_list(items: list[str] | tuple[str, ...], block: bool) -> str:
    """A YAML list after its key: flow style ` [a, b]` or block style (Obsidian's Properties UI)."""
    if block:
        return "".join(f"\n  - {item}" for item in items)
    return " [" + ", ".join(items) + "]"


def _entity_note(e: Entity, ulid: str, block: bool) -> str:
    """An entity note: aliases, tags, a heading and one sentence."""
    return (f"---\nid: {ulid}\ntype: entity\naliases:{_yaml_list(e.aliases, block)}\n"
            f"tags:{_yaml_list(['entity', e.kind], block)}\ntimestamp: 2025-11-20T10:00:00+08:00\n---\n"
            f"# {e.title}\n\n"
            f"{e.kind.capitalize()} known as {', '.join(e.aliases)}.\n")


def _unique_title(title: str, taken: set[str]) -> str:
    """title, or title with a number appended when taken (compared case-insensitively)."""
    stem, k = title, 2
    while title.casefold() in taken:
        title, k = f"{stem} {k}", k + 1
    taken.add(title.casefold())
    return title


def _folder_and_status(r: random.Random) -> tuple[str, str]:
    """2% candidates in inbox/, 2% archived, 3% superseded, the rest active."""
    roll = r.random()
    if roll < 0.02:
        return "inbox", "candidate"
    if roll < 0.04:
        return "archive", "archived"
    return "memories", ("superseded" if roll < 0.07 else "active")


def _memory_note(r: random.Random, draft: Draft, zh: bool, ms: int, status: str) -> str:
    """The note text: frontmatter in vaultmem's layout (10% with block-style tag lists), then the body."""
    stamp = dt.datetime.fromtimestamp(ms / 1000, _ZH_TZ if zh else r.choice(_EN_TZS)).isoformat(timespec="seconds")
    source = r.choice(_SOURCES)
    trust = "external" if source.startswith("import:") else ("user" if source == "user" else "agent")
    head = [f"id: {_ulid(ms, r.getrandbits(80))}", f"type: {draft.type}"]
    if draft.value:
        head.append(f"value: {draft.value}")
    head += [f"score: {r.randint(10, 100) / 10}", f"timestamp: {stamp}",
             f"tags:{_yaml_list(draft.tags, r.random() < 0.1)}", f"source: {source}",
             f"lifecycle: {draft.lifecycle}", f"trust: {trust}", f"status: {status}",
             f"namespace: {'shared' if r.random() < 0.9 else 'agent:hermes'}"]
    return "---\n" + "\n".join(head) + "\n---\n" + draft.body + "\n"


def make_vault(path: str | Path, n_notes: int, seed: int = 0) -> dict:
    """Build a vault of n_notes memories (plus ~200 entities) at path; deterministic for a seed.

    Returns {"path", "notes", "entities", "bytes", "seconds", "ids"}: ids is a sample of up to
    2000 contract and invoice numbers that the notes contain, for make_queries.
    """
    start = time.perf_counter()
    vault = Vault.init(path)
    r = random.Random(seed)
    entities = build_entities(seed)
    writer = _Writer(r, entities)
    end_ms = int(REFERENCE_END.timestamp() * 1000)
    total = 0
    for e in entities:
        text = _entity_note(e, _ulid(end_ms - _YEAR_S * 1000, r.getrandbits(80)), r.random() < 0.3)
        total += _write(vault.folders["entities"] / f"{e.title}.md", text)
    ids: list[str] = []
    taken: set[str] = set()
    step = max(1, n_notes // _ID_SAMPLE)
    for i in range(n_notes):
        draft, zh = writer.memory()
        folder, status = _folder_and_status(r)
        text = _memory_note(r, draft, zh, end_ms - int(r.random() * _YEAR_S * 1000), status)
        total += _write(vault.folders[folder] / f"{_unique_title(draft.title, taken)}.md", text)
        if draft.type in ("contract_id", "invoice") and len(ids) < _ID_SAMPLE and i % step == 0:
            ids.append(draft.value)
    vault.close()
    return {"path": str(vault.root), "notes": n_notes, "entities": len(entities), "bytes": total,
            "seconds": round(time.perf_counter() - start, 3), "ids": ids}


def _write(path: Path, text: str) -> int:
    """Write a note (UTF-8); returns its size in bytes."""
    data = text.encode("utf-8")
    with open(path, "wb") as handle:
        handle.write(data)
    return len(data)


def make_queries(n: int, seed: int = 0, ids: list[str] | tuple[str, ...] = ()) -> list[dict]:
    """n queries {"text", "tags", "kind"}: ~40% text only, ~30% tags only, ~30% text and a tag.

    Text is a Chinese phrase, an English phrase, an id (from ids when given), an id fragment
    like CT2024, or an entity's title or alias.
    """
    r = random.Random(f"queries-{seed}")
    entities = build_entities(seed)
    tags = tag_pool(entities)
    weights = list(accumulate(1.0 / (i + 1) ** 0.8 for i in range(len(tags))))
    out = []
    for _ in range(n):
        roll = r.random()
        if roll < 0.4:
            kind, text = _query_text(r, entities, ids)
            out.append({"text": text, "tags": [], "kind": "text:" + kind})
        elif roll < 0.7:
            picked = list(dict.fromkeys(r.choices(tags, cum_weights=weights, k=r.randint(1, 2))))
            out.append({"text": "", "tags": picked, "kind": "tags"})
        else:
            kind, text = _query_text(r, entities, ids)
            out.append({"text": text, "tags": r.choices(tags, cum_weights=weights, k=1), "kind": "both:" + kind})
    return out


def _query_text(r: random.Random, entities: list[Entity], ids) -> tuple[str, str]:
    """(kind, text) of one text query."""
    kind = r.choice(("zh", "en", "id", "fragment", "entity"))
    if kind == "zh":
        return kind, r.choice(_ZH_PHRASES) if r.random() < 0.5 else r.choice(_ZH_TOPICS) + r.choice(_ZH_VERBS)
    if kind == "en":
        return kind, r.choice(_EN_PHRASES) if r.random() < 0.5 else f"{r.choice(_EN_ADJ)} {r.choice(_EN_NOUNS)}"
    if kind == "id":
        return kind, r.choice(ids) if ids else f"CT{r.randint(2023, 2026)}-{r.randint(0, 9999):04d}"
    if kind == "fragment":
        return kind, r.choice((f"CT{r.randint(2023, 2026)}", f"INV-{r.randint(2024, 2026)}", r.choice(_ERRORS)[0]))
    e = r.choice(entities)
    return kind, r.choice((e.title, *e.aliases))
