/**
 * The router's first stage (I3 step 1): is this input an operations question at all? Deterministic
 * keyword lists (English and Chinese); the input is refused only when it names an off-topic subject
 * and carries no operations signal, so "the game server is down" still goes through.
 */

/** Subjects that are not operations work. */
const OUT_OF_SCOPE = [
  "anime", "manga", "cartoon", "video game recommendation", "game recommendation", "which game", "play a game",
  "weather", "forecast tomorrow", "recipe", "cook", "bake", "restaurant", "movie", "film recommendation", "tv show", "netflix",
  "song", "lyrics", "poem", "poetry", "haiku", "joke", "horoscope", "zodiac", "football", "soccer", "basketball", "nba", "world cup",
  "celebrity", "dating", "girlfriend", "boyfriend", "travel plan", "vacation", "lottery", "stock tip",
  "动漫", "动画", "番剧", "漫画", "游戏推荐", "玩什么游戏", "天气", "下雨", "菜谱", "做菜", "怎么做饭", "好吃", "餐厅", "电影", "电视剧", "追剧",
  "歌词", "唱歌", "写诗", "一首诗", "笑话", "星座", "足球", "篮球", "世界杯", "比分", "明星", "恋爱", "女朋友", "男朋友", "旅游", "彩票", "股票推荐",
];

/** Words that mark an operations question, whatever else it mentions. */
const OPS_SIGNALS = [
  "server", "host", "node", "cluster", "prod", "production", "staging", "service", "daemon", "systemd", "unit", "process",
  "cpu", "memory", "oom", "disk", "inode", "filesystem", "load", "latency", "timeout", "timed out", "refused", "unreachable",
  "dns", "tcp", "http", "https", "tls", "ssl", "certificate", "port", "firewall", "iptables", "nftables", "network", "packet",
  "error", "errors", "exception", "crash", "restart", "down", "outage", "incident", "alert", "firing", "pager", "on-call", "oncall",
  "5xx", "502", "503", "504", "500", "deploy", "rollback", "pod", "container", "docker", "kubernetes", "k8s", "namespace",
  "database", "db", "redis", "mysql", "postgres", "kafka", "nginx", "queue", "api", "endpoint", "log", "logs", "journal",
  "服务", "服务器", "机器", "主机", "节点", "集群", "线上", "生产", "告警", "报警", "故障", "宕机", "挂了", "挂掉", "重启", "崩溃",
  "超时", "报错", "错误", "异常", "延迟", "卡", "慢", "打不开", "访问不了", "连不上", "连接", "磁盘", "内存", "负载", "网络", "端口",
  "域名", "解析", "证书", "防火墙", "日志", "进程", "容器", "部署", "发布", "回滚", "数据库", "接口", "请求",
];

/** A URL, an IP address or host:port is an operations signal on its own. */
const TECHNICAL = /https?:\/\/|\b\d{1,3}(\.\d{1,3}){3}\b|\b[a-z0-9-]+(\.[a-z0-9-]+)+:\d{2,5}\b|\.service\b/i;

/** True when `phrase` occurs in `text` (both lower case); ASCII words must not be part of a longer word. */
export function containsPhrase(text: string, phrase: string): boolean {
  const p = phrase.toLowerCase();
  let from = 0;
  for (;;) {
    const i = text.indexOf(p, from);
    if (i < 0) return false;
    const before = i > 0 ? text[i - 1] : "";
    const after = text[i + p.length] ?? "";
    const wordStart = /[a-z0-9]/.test(p[0]) ? !/[a-z0-9]/.test(before) : true;
    const wordEnd = /[a-z0-9]/.test(p[p.length - 1]) ? !/[a-z0-9]/.test(after) : true;
    if (wordStart && wordEnd) return true;
    from = i + 1;
  }
}

/** The pre-check's answer: refused with the off-topic words found, or passed with the ops signals seen. */
export interface ScopeCheck {
  outOfScope: boolean;
  offTopic: string[];
  signals: string[];
}

/** Checks one input; `extraSignals` are the playbooks' triggers and tags (any of them is an ops signal). */
export function checkScope(text: string, extraSignals: readonly string[] = []): ScopeCheck {
  const t = text.toLowerCase();
  const offTopic = OUT_OF_SCOPE.filter((w) => containsPhrase(t, w));
  const signals = [...OPS_SIGNALS, ...extraSignals].filter((w) => containsPhrase(t, w));
  if (TECHNICAL.test(text)) signals.push("(address)");
  return { outOfScope: offTopic.length > 0 && signals.length === 0, offTopic, signals };
}
