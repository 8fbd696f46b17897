# The label `long` on the discovered tests that run only in the suite's second part (the
# README's test command runs `-LE 'hog|long'`, then `-L long`; docs/testing.md says which and
# why). Read by CTest after the discovery's lists (tests/, tests/postgres/, tests/brokers/, each
# for its own tests; a name of another folder matches nothing there). CTest adds the label to
# those the test has. A renamed test falls back into the quick part: `ctest -N -L long` lists
# the label's tests.

# dedupsim's own tests of 1.2 s or more in CI (wall, load 1 to 5): the fixed 10 s fuzz loop,
# the comparisons with brute force, the repeated races, pages and runs of every scenario.
set_tests_properties(
  "fuzz: mutated consumer and scenario files never crash, hang or escape their folder"
  "the scenario pages show what the program prints now"
  "a crash beside a concurrent copy: reduced and brute force reach the same final states"
  "the race lessons' pages are the same run after run"
  "concurrent gives the post's line 50 times in each instance and journal mode"
  "the matrix's verdicts and shortest counterexamples do not change with the reduction"
  "a blocked copy retries only after a step released the lock it waits for"
  "reduced and brute force reach the same final states, one schedule per class"
  "db option on anything that is not a dedupsim database exits 3 and loses nothing"
  "past its budget a file is sampled, and says it was not exhaustive"
  "run --color always colors the tag and figures, which strip back to the plain line"
  "the class world's plans: reduced and brute force reach the same final states"
  "optimistic-email: both copies send, the claim-first email sends once"
  "a second copy started after the first committed never waited for it"
  "soak with natural-key holds too"
  PROPERTIES LABELS long)

# The PostgreSQL tests of 1.2 s or more (each mostly waits out the lessons' holds on the
# server); the quick part keeps the other PostgreSQL tests and `run all` on PostgreSQL.
set_tests_properties(
  "postgres:check --backend postgres passes the correct consumers of each shape"
  "postgres:check --backend postgres refuses statements that reach outside the file's database"
  "postgres:the key scenarios on PostgreSQL: --check holds and the line is SQLite's"
  "postgres:above read committed the lessons show 40001 as B's outcome and --check holds"
  "postgres:the effects, broker and store lessons run on PostgreSQL with the figures SQLite has"
  "postgres:claim-last on PostgreSQL: B's stock UPDATE waits on Dune's row, then its claim fails"
  "postgres:a throwaway cluster is a copy of the cached template, and a stale, foreign or damaged template is made again by initdb"
  "postgres:orphan-claim on PostgreSQL: the SIGKILLed owner's committed claim is taken over"
  "postgres:explore on PostgreSQL: the reduction's per-table footprints give brute force's outcomes"
  "postgres:soak: orders never reached before the timeout are not reported lost"
  "postgres:an option changes the PostgreSQL figures as it changes SQLite's"
  "postgres:a PostgreSQL run makes no SQLite database, and a side-store folder only for a lesson that keeps one"
  "postgres:run all --check holds on PostgreSQL, with the quantity changed"
  "postgres:docs/explore.md shows the PostgreSQL matrix exactly as explore prints it"
  "postgres:check --backend postgres grades a batch around a malformed file and SQL PostgreSQL refuses"
  "postgres:explore on PostgreSQL: the added rows' reduced search gives brute force's outcomes"
  "postgres:hung-consumer on PostgreSQL: B's lock_timeout fires first (55P03), the redelivery waits until the idle timeout ends A's session"
  "postgres:on PostgreSQL a wait that went on is recorded as a take, one given up is not"
  "postgres:isolation-retry at serializable: 40001 without a retry loop fails the delivery, with one it succeeds, the retried inbox processes one message once"
  "postgres:check --backend postgres fails the deferred check with no key, with both copies reading no row"
  "postgres:soak --backend postgres: SIGKILLed consumer processes lose and double nothing"
  "postgres:optimistic-email on PostgreSQL: B sends, then its INSERT waits on A's key and fails with 23505"
  "postgres:isolation-retry at read-committed: B's UPDATE waits and goes on, nothing fails"
  "postgres:soak --role: consumers started separately share one server and one broker table"
  "postgres:duplicate-in-transaction on PostgreSQL: 25P02 after a plain duplicate, not after a savepoint or ON CONFLICT, which waits and reports 0 rows"
  "postgres:concurrent-different --check holds on PostgreSQL: the other book's order waits for nothing"
  "postgres:on PostgreSQL the pair's race follows the options: with stagger < hold B meets A's row however short the hold, in threads and in processes"
  "postgres:check --backend postgres --html: the file's database after each step, committed rows only"
  "postgres:concurrent-different on PostgreSQL: B's INSERT does not wait, its UPDATE waits on Dune's row"
  "postgres:soak --backend postgres: the same kills double the naive consumer's orders"
  "postgres:hung-consumer on PostgreSQL: killed, B goes on, stopped, the server's idle_in_transaction_session_timeout ends A's session and B goes on"
  "postgres:explore on PostgreSQL: the rows added through the store seam, and their cells"
  "postgres:explore on PostgreSQL: the cells of the four rows under duplicate, crash, concurrent"
  "postgres:bench --backend postgres: every strategy checked, figures from the server and the run"
  "postgres:bench --backend postgres follows --synchronous-commit and --books"
  "postgres:explore --backend postgres: the matrix marks the cells that differ from SQLite, and prints a counterexample"
  "postgres:Ctrl-C during a run on a throwaway cluster: exit 130, the server stopped, its folder removed"
  "postgres:without --dsn a throwaway cluster runs the lesson and is removed at the end"
  "postgres:receive-count and content-mismatch on PostgreSQL: the duplicate's INSERT runs under a savepoint, so the transaction goes on after 23505"
  PROPERTIES LABELS long)

# The NATS tests of 1.2 s or more (each starts a nats-server of its own); the quick part keeps
# the others (bench, the interrupts before the server is up, the refusals).
set_tests_properties(
  "nats:every lesson on --broker nats runs with its checks held or refuses with exit 2 and why"
  "nats:consumers started separately share a NATS stream with a supervisor, one SIGKILLed: lost 0, doubled 0"
  "nats:run all --broker nats: the post's six lines, every lost ack redelivered by the server"
  "nats:the broker lessons on NATS: figures read from the server, each as the lesson expects for NATS"
  "nats:soak over NATS with SIGKILLed consumers, on SQLite and on PostgreSQL: lost 0, doubled 0, counts from the server"
  "nats:an interrupt right after nats-server is forked stops and reaps it before exit 130"
  PROPERTIES LABELS long)

# The two RabbitMQ tests that start a private node of their own (tag [private-node]: the
# interrupts), not the fixture's shared node, which is started once, in the quick part, for
# the tests that use it (tests/brokers/CMakeLists.txt).
set_tests_properties(
  "rabbitmq:an interrupt stops the private RabbitMQ node and its epmd, and removes its folder"
  "rabbitmq:an interrupt right after the RabbitMQ node is forked stops it and epmd before exit 130"
  PROPERTIES LABELS long)

# Moved by the quick part's second pass (issue 29 item 5; docs/testing.md): the quick part's
# longest tests that no mechanism needs there (1.4 to 2.4 s each in its runs at load 4; SQLite
# keeps every other lesson, bench and file test in the quick part, PostgreSQL its 36 others).
set_tests_properties(
  "a statement that never ends is a row of the batch, at its line"
  "dedupsim bench prints a table, and the strategies asked for only"
  "a side store never overwrites a foreign file, and removes its own"
  "the shipped lessons give their figures and pass --check"
  "soak with naive doubles at least every duplicate"
  "postgres:a schema of ours made before the receipt and lease columns gets them on open"
  PROPERTIES LABELS long)
