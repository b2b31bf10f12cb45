/**
 * Reference texts of the router's scope check (I3 step 1), English and Chinese. The scope check
 * does not look words up in a list: it ranks the input against two reference documents with the
 * router's own tokenisation (stemming, Chinese bigrams) — what operations work talks about (these
 * texts plus every loaded playbook and skill description) and what everyday requests an assistant
 * gets that are not operations work — and measures how much of the input either covers. These
 * texts describe the two kinds of request; they are prose, not an exhaustive list, and the playbooks
 * loaded at run time extend the operations side.
 */

/** Operations work, beyond what the playbooks say: the systems, their parts, their failures, the people and the tools. */
export const OPS_REFERENCE = `
Operating production systems: servers, hosts, machines, boxes, virtual machines, instances, nodes,
clusters, data centres, regions, availability zones, racks, switches, routers, load balancers,
gateways, proxies, firewalls, VPNs, DNS, certificates, storage, volumes, disks, partitions,
filesystems, databases, caches, queues, brokers, schedulers, cron jobs, timers, batch jobs,
backups, replication, failover, deployments, releases, rollouts, rollbacks, canaries, feature
flags, configuration changes, pipelines, CI, builds, containers, images, registries, pods,
namespaces, services, daemons, processes, workers, threads, agents, exporters, monitoring,
metrics, dashboards, alerts, alarms, pages, incidents, outages, on-call, postmortems, runbooks,
SLOs, error budgets, latency, throughput, error rate, availability, health checks, probes,
timeouts, retries, saturation, capacity, quotas, limits, logs, traces, journal, syslog, kernel,
crashes, hangs, restarts, flapping, degraded, unhealthy, unreachable, slow, broken, down, failing,
errors, exceptions, stack traces, status codes, 5xx, 4xx, users complaining, customers affected,
the site, the app, the API, the backend, the frontend, production, staging, the environment,
something changed, what happened, since the deploy, since the upgrade, after the maintenance.
运维 生产环境 线上 线下 测试环境 预发 服务器 主机 机器 虚拟机 实例 节点 集群 机房 专线 交换机 路由器 负载均衡
网关 代理 防火墙 安全组 域名 证书 存储 硬盘 分区 文件系统 数据库 缓存 消息队列 定时任务 计划任务 备份 主从
同步 切换 部署 上线 发版 发布 变更 回滚 灰度 配置 流水线 构建 镜像 容器 服务 进程 守护进程 任务 监控 指标
大盘 告警 报警 值班 故障 事故 复盘 排查 定位 延迟 耗时 吞吐 错误率 可用性 健康检查 探活 超时 重试 限流 熔断
容量 配额 日志 链路 内核 宕机 挂了 挂掉 崩了 崩溃 卡死 重启 抖动 异常 报错 不可用 访问不了 打不开 连不上 很慢
变慢 卡顿 飙高 打满 爆了 起不来 不对劲 一片红 用户反馈 客户投诉 影响 业务 接口 后端 前端 网站 应用 系统
`;

/** Everyday requests that are not operations work: entertainment, food, sport, creative writing, travel, shopping, personal life, homework, general knowledge. */
export const OFF_TOPIC_REFERENCE = `
Recommend me a movie, a film, a TV show, a series, an anime, a manga, a book, a novel, a song, an
album, a band, a podcast, a video game, a board game, a mobile game. What should I watch, read,
play or listen to this weekend? Who won the match, the game, the final, the cup, the league, the
championship, the tournament? What was the score? Football, soccer, basketball, baseball, tennis,
golf, the Olympics, the World Cup, the NBA, the Premier League. Write me a poem, a haiku, a
song, lyrics, a story, a fairy tale, a limerick, a love letter, a birthday card, a speech about
anything. Tell me a joke, a riddle, a fun fact. A recipe: how do I cook, bake, grill, roast, fry
this dish, what to eat for dinner, a substitute for an ingredient, a good restaurant. Plan a
trip, a vacation, a holiday, an itinerary, flights, hotels, sightseeing, what to visit in a city.
What gift should I buy for my girlfriend, boyfriend, wife, husband, mother, father, friend, kid?
Dating advice, relationships, a wedding, a birthday party. The weather tomorrow, the forecast,
will it rain. My horoscope, zodiac sign, astrology, the lottery, stock tips, which shares to buy,
crypto prices. Help with homework, math equations, algebra, geometry, history, biology, chemistry
questions, a school essay, translation of a sentence. Health, diet, fitness, workout, weight
loss, sleep, skin care, fashion, clothes, hairstyle, shopping, a new phone to buy, pets, dogs,
cats, gardening, celebrities, gossip, philosophy, the meaning of life.
推荐一部电影 电视剧 综艺 动漫 番剧 漫画 小说 一本书 一首歌 专辑 播客 游戏 手游 桌游 周末看什么 玩什么 听什么
好看的 好玩的 好听的 比赛谁赢了 比分多少 球赛 足球 篮球 世界杯 奥运会 湖人 勇士 曼联 皇马 联赛 冠军 写一首诗
写首诗 作一首关于秋天的诗 写一首关于春天的诗 写首歌 歌词 写个故事 童话 情书 生日祝福 讲个笑话 脑筋急转弯
菜谱 怎么做 好吃 红烧肉 做饭 烘焙 晚饭吃什么 餐厅 外卖 旅游 旅行 攻略 路线 去哪里玩 景点 酒店 机票 签证
送什么礼物 女朋友 男朋友 老婆 老公 父母 孩子 恋爱 相亲 婚礼 生日 天气 下雨 明天 星座 运势 彩票 股票推荐
基金 比特币 作业 数学题 方程 历史 物理 化学 作文 翻译一句话 健康 减肥 健身 睡眠 护肤 穿搭 发型 买手机
宠物 猫 狗 养花 明星 八卦 人生的意义
`;

/**
 * Requests people sent that are not operations work (the router benchmark's tuning cases labelled
 * "refuse": router-cases, -holdout, -heldback and -heldback2): the everyday side learns from them
 * as the playbooks learn from their examples.
 */
export const OFF_TOPIC_EXAMPLES: readonly string[] = [
  "recommend me some anime like Attack on Titan",
  "what's the weather in Berlin tomorrow?",
  "give me a recipe for carbonara",
  "write a poem about autumn leaves",
  "who won the Champions League final last night?",
  "any good open-world games for the PS5?",
  "tell me a joke about Kubernetes",
  "what movie should I watch this weekend?",
  "推荐几部好看的动漫",
  "明天上海天气怎么样",
  "红烧肉怎么做",
  "讲个笑话",
  "昨晚曼联比分多少",
  "推荐一部周末看的电影",
  "写一首关于服务器的诗",
  "最近有什么好玩的手机游戏",
  "Who won the Champions League final last year?",
  "What's a good substitute for buttermilk in pancakes?",
  "Any recommendations for a 3-day itinerary in Lisbon?",
  "can you help me solve 3x + 7 = 22 for my kid's homework",
  "Is the new Dune movie worth watching in IMAX?",
  "今晚湖人对勇士谁赢了？",
  "红烧肉怎么做才不腻？",
  "五一去成都玩三天，有什么推荐的路线",
  "最近有什么好看的电视剧吗",
  "女朋友下周生日，送什么礼物好？",
  "write a short poem about servers humming in the night",
  "tell me a joke about DNS",
  "what's a good recipe for banana bread without eggs?",
  "who won the Champions League final in 2019?",
  "flying to Lisbon next month, which neighborhoods should I stay in?",
  "help me with my calculus homework: what's the derivative of x^3 * sin(x)?",
  "recommend a mechanical keyboard under $100 for coding",
  "my girlfriend is upset that I'm always on call and keep checking pagerduty at dinner, how do I apologize?",
  "write a bedtime story for my kid where a little Kubernetes pod goes on an adventure",
  "what's the capital of Australia?",
  "给我写一首关于服务器机房的诗",
  "讲个程序员的笑话吧",
  "红烧肉怎么做才不腻？",
  "昨晚湖人对勇士谁赢了？",
  "五一去成都玩三天，帮我安排个行程",
  "帮我解一道初中数学题：2x + 5 = 17，x 等于多少",
  "想买个扫地机器人，预算两千左右，推荐一下",
  "天天值班半夜被告警叫醒，和老婆吵架了，该怎么办",
  "用“502 Bad Gateway”为题写一段相声",
  "世界上最高的山是哪座？",
  "Write a haiku about a pod stuck in CrashLoopBackOff for our team's holiday card",
  "What's a good substitute for buttermilk in pancakes?",
  "Who won the 2010 FIFA World Cup final and what was the score?",
  "I'm flying to Lisbon in May, which neighborhoods are nice to stay in?",
  "For my networking class essay: explain in simple words what the seven layers of the OSI model are",
  "Should I put my savings into an index fund or pay off my car loan first?",
  "My home Wi-Fi router is ancient. Which router should I buy for under $100?",
  "Help me rephrase my cover letter so it sounds less stiff, I'm applying for an SRE job",
  "what's the difference between 'affect' and 'effect'?",
  "I've had a sore throat and a headache for three days, should I see a doctor?",
  "帮我写一首关于服务器宕机的打油诗，年会上要念",
  "红烧肉怎么做才不腻？",
  "周末去杭州玩两天，有什么推荐的路线？",
  "NBA 历史上总得分最多的球员是谁？",
  "我家狗狗最近不爱吃东西，需要带去宠物医院吗？",
  "考研复习：TCP 三次握手为什么不是两次？帮我整理成好背的答案",
  "“的”“地”“得”到底怎么区分？",
  "想买一个机械键盘，预算五百左右，有什么推荐？",
  "做了三年运维，想转产品经理，你觉得靠谱吗？",
  "最近总是失眠，有什么办法改善睡眠？",
];
