use super::*;

const GOOD: &str = r#"
[run]
suite = "python-pitfalls"
max_tokens = 512
temperature = 0.0
style = "concise"
seed = 7

[providers.local]
kind = "files"

[providers.oa]
kind = "openai"
base_url = "http://127.0.0.1:9/v1/"
max_concurrency = 4

[[models]]
id = "reference"
provider = "local"
model = "reference"
family = "handwritten"

[[models]]
id = "gpt"
provider = "oa"
model = "gpt-4o-mini"
family = "openai"
price_input_per_mtok = 0.15
price_output_per_mtok = 0.6
"#;

fn parse(text: &str) -> Result<Config, ConfigError> {
    parse_config("judge.toml", text)
}

fn error_of(text: &str) -> String {
    parse(text)
        .expect_err("config should be refused")
        .to_string()
}

#[test]
fn good_config_resolves_defaults() {
    let c = parse(GOOD).expect("valid");
    assert_eq!(c.run.style, StylePreset::Concise);
    assert_eq!(c.run.seed, 7);
    let oa = &c.providers["oa"];
    assert_eq!(oa.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
    assert_eq!(oa.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
    assert_eq!(oa.max_retries, 6);
    assert_eq!(c.models.len(), 2);
    assert_eq!(c.models[1].cost_usd(1_000_000, 1_000_000), Some(0.75));
    assert_eq!(c.models[0].cost_usd(10, 10), None);
}

#[test]
fn per_model_generation_setting_is_refused() {
    let text = GOOD.replace(
        "family = \"openai\"",
        "family = \"openai\"\ntemperature = 0.7",
    );
    let e = error_of(&text);
    assert!(e.starts_with("judge.toml: models[1].temperature: "), "{e}");
    assert!(e.contains("run-wide"), "{e}");
}

#[test]
fn per_judge_generation_setting_is_refused() {
    let text = format!(
        "{GOOD}\n[[judges]]\nid = \"j\"\nprovider = \"oa\"\nmodel = \"m\"\nfamily = \"x\"\nmax_tokens = 9\n"
    );
    assert!(error_of(&text).contains("judges[0].max_tokens"));
}

#[test]
fn unknown_key_names_line_and_key() {
    let e = error_of(&GOOD.replace("seed = 7", "seed = 7\ncolour = \"red\""));
    assert!(e.starts_with("judge.toml: line "), "{e}");
    assert!(e.contains("colour"), "{e}");
}

#[test]
fn syntax_error_names_line() {
    let e = error_of("[run]\nsuite = \n");
    assert!(e.contains("line 2"), "{e}");
}

#[test]
fn unknown_provider_is_refused() {
    let e = error_of(&GOOD.replace("provider = \"oa\"", "provider = \"nope\""));
    assert!(e.contains("models[1].provider"), "{e}");
    assert!(e.contains("unknown provider `nope`"), "{e}");
    assert!(e.ends_with("add a [providers.nope] table"), "{e}");
    // The table to add is written as TOML would need it: a dotted name is quoted.
    let e = error_of(&GOOD.replace("provider = \"oa\"", "provider = \"my.vllm\""));
    assert!(e.ends_with(r#"add a [providers."my.vllm"] table"#), "{e}");
    let e = error_of(&GOOD.replace("provider = \"oa\"", "provider = \"a\\u0001\\\"b\""));
    assert!(
        e.ends_with(r#"add a [providers."a\u0001\"b"] table"#),
        "{e}"
    );
}

#[test]
fn unknown_provider_kind_is_refused() {
    let e = error_of(&GOOD.replace("kind = \"openai\"", "kind = \"cohere\""));
    assert!(e.contains("providers.oa.kind"), "{e}");
}

#[test]
fn missing_family_is_refused() {
    let e = error_of(&GOOD.replace("family = \"openai\"\n", ""));
    assert!(e.contains("models[1].family"), "{e}");
}

#[test]
fn a_family_of_punctuation_alone_is_refused() {
    for family in ["-", "?", " -_ "] {
        let e = error_of(&GOOD.replace("family = \"openai\"", &format!("family = \"{family}\"")));
        assert!(
            e.contains("models[1].family") && e.contains("names no family"),
            "{family}: {e}"
        );
    }
}

#[test]
fn absurd_prices_retries_and_timeouts_are_refused() {
    let e = error_of(&GOOD.replace(
        "price_input_per_mtok = 0.15",
        "price_input_per_mtok = 1.7e308",
    ));
    assert!(
        e.contains("models[1].price_input_per_mtok") && e.contains("is above 1000000"),
        "{e}"
    );
    for (key, value, says) in [
        ("max_retries", "101", "is above 100"),
        ("timeout_secs", "86401", "is above 86400"),
    ] {
        let e = error_of(&GOOD.replace(
            "[providers.oa]\n",
            &format!("[providers.oa]\n{key} = {value}\n"),
        ));
        assert!(
            e.contains(&format!("providers.oa.{key}")) && e.contains(says),
            "{key}: {e}"
        );
    }
}

#[test]
fn duplicate_model_id_is_refused() {
    let e = error_of(&GOOD.replace("id = \"gpt\"", "id = \"reference\""));
    assert!(e.contains("defined twice"), "{e}");
}

#[test]
fn bad_style_lists_presets() {
    let e = error_of(&GOOD.replace("\"concise\"", "\"pirate\""));
    assert!(
        e.contains("run.style") && e.contains("none, concise, eli5"),
        "{e}"
    );
}

#[test]
fn out_of_range_settings_are_refused() {
    assert!(
        error_of(&GOOD.replace("temperature = 0.0", "temperature = 3.5"))
            .contains("run.temperature")
    );
    assert!(
        error_of(&GOOD.replace("max_tokens = 512", "max_tokens = 0")).contains("run.max_tokens")
    );
    let e = error_of(&GOOD.replace("max_concurrency = 4", "max_concurrency = 0"));
    assert!(e.contains("providers.oa.max_concurrency"), "{e}");
}

#[test]
fn half_a_price_is_refused_naming_the_missing_key() {
    let e = error_of(&GOOD.replace("price_output_per_mtok = 0.6\n", ""));
    assert!(e.contains("price_output_per_mtok: is missing"), "{e}");
    let e = error_of(&GOOD.replace("price_input_per_mtok = 0.15\n", ""));
    assert!(e.contains("price_input_per_mtok: is missing"), "{e}");
}

#[test]
fn files_provider_takes_no_url() {
    let e = error_of(&GOOD.replace(
        "kind = \"files\"",
        "kind = \"files\"\nbase_url = \"http://x\"",
    ));
    assert!(e.contains("providers.local.base_url"), "{e}");
}

#[test]
fn empty_key_env_means_no_key() {
    let c = parse(&GOOD.replace(
        "max_concurrency = 4",
        "max_concurrency = 4\napi_key_env = \"\"",
    ))
    .expect("valid");
    assert_eq!(c.providers["oa"].api_key_env, None);
}

#[test]
fn invalid_model_id_is_refused() {
    let e = error_of(&GOOD.replace("id = \"gpt\"", "id = \"g p t\""));
    assert!(e.contains("models[1].id"), "{e}");
}

#[test]
fn temperature_above_one_is_refused_with_an_anthropic_model() {
    let text = GOOD
        .replace("temperature = 0.0", "temperature = 1.5")
        .replace("kind = \"openai\"", "kind = \"anthropic\"");
    let e = error_of(&text);
    assert!(
        e.contains("run.temperature") && e.contains("Anthropic") && e.contains("`gpt`"),
        "{e}"
    );
    let openai_only = GOOD.replace("temperature = 0.0", "temperature = 1.5");
    assert!(parse(&openai_only).is_ok(), "OpenAI accepts up to 2.0");
}

#[test]
fn a_judge_named_like_the_execution_judge_is_refused() {
    let text = format!(
        "{GOOD}\n[[judges]]\nid = \"exec\"\nprovider = \"oa\"\nmodel = \"m\"\nfamily = \"x\"\n"
    );
    let e = error_of(&text);
    assert!(e.contains("judges[0].id") && e.contains("built-in"), "{e}");
}

#[test]
fn a_judge_with_a_models_id_is_refused() {
    let text = format!(
        "{GOOD}\n[[judges]]\nid = \"gpt\"\nprovider = \"oa\"\nmodel = \"m\"\nfamily = \"x\"\n"
    );
    let e = error_of(&text);
    assert!(
        e.contains("judges[0].id") && e.contains("also a model's id"),
        "{e}"
    );
}

#[test]
fn judges_whose_leaderboard_files_would_collide_are_refused() {
    let judge = |id: &str| {
        format!("\n[[judges]]\nid = \"{id}\"\nprovider = \"oa\"\nmodel = \"m\"\nfamily = \"x\"\n")
    };
    let e = error_of(&format!("{GOOD}{}{}", judge("org/j"), judge("org:j")));
    assert!(
        e.contains("judges[1].id")
            && e.contains(
                "judges `org/j` and `org:j` would share the leaderboard file leaderboards/org_j.*"
            ),
        "{e}"
    );
    let e = error_of(&format!("{GOOD}{}{}", judge("Org_J"), judge("org/j")));
    assert!(e.contains("judges `Org_J` and `org/j` would share"), "{e}");
    let text = format!("{GOOD}{}{}", judge("org/j"), judge("org-j"));
    assert!(parse_config("judge.toml", &text).is_ok());
}

#[test]
fn unknown_provider_kind_lists_every_kind() {
    let e = error_of(&GOOD.replace("kind = \"openai\"", "kind = \"gemeni\""));
    assert!(e.contains("openai, anthropic, gemini, files"), "{e}");
}

#[test]
fn toml_errors_name_the_line_of_the_key() {
    let e = error_of("[run]\nsuite = \"mini\"\nbogus = 1\n");
    assert!(e.contains("line 3") && e.contains("bogus"), "{e}");
    let e = error_of("[run]\nsuite = \"mini\"\n\n[[models]]\n");
    assert!(e.contains("line 4") && e.contains("id"), "{e}");
}

#[test]
fn token_limit_field_is_an_openai_option_with_two_values() {
    let with = |field: &str| {
        GOOD.replace(
            "max_concurrency = 4",
            &format!("max_concurrency = 4\ntoken_limit_field = \"{field}\""),
        )
    };
    let config = parse(&with("max_completion_tokens")).expect("valid");
    assert_eq!(
        config.providers["oa"].token_limit_field,
        TokenLimitField::MaxCompletionTokens
    );
    assert_eq!(
        parse(GOOD).expect("valid").providers["oa"].token_limit_field,
        TokenLimitField::MaxTokens
    );
    let e = error_of(&with("max_output_tokens"));
    assert!(e.contains("providers.oa.token_limit_field"), "{e}");
    assert!(
        e.contains("not one of max_tokens, max_completion_tokens"),
        "{e}"
    );
    let e = error_of(&GOOD.replace(
        "kind = \"files\"",
        "kind = \"files\"\ntoken_limit_field = \"max_tokens\"",
    ));
    assert!(e.contains("only `openai` providers take it"), "{e}");
}

#[test]
fn judge_temperature_defaults_to_zero_and_is_bounded() {
    assert_eq!(parse(GOOD).expect("valid").run.judge_temperature, 0.0);
    let warm = GOOD.replace("seed = 7", "seed = 7\njudge_temperature = 1.0");
    assert_eq!(parse(&warm).expect("valid").run.judge_temperature, 1.0);
    let e = error_of(&GOOD.replace("seed = 7", "seed = 7\njudge_temperature = 3.0"));
    assert!(e.contains("run.judge_temperature"), "{e}");
}

#[test]
fn anthropic_takes_temperatures_up_to_one_for_models_and_judges() {
    let claude = GOOD.replace(
        "[providers.oa]",
        "[providers.claude]\nkind = \"anthropic\"\n\n[providers.oa]",
    );
    let as_model = claude.clone()
        + "\n[[models]]\nid = \"sonnet\"\nprovider = \"claude\"\nmodel = \"claude-sonnet\"\nfamily = \"anthropic\"\n";
    let e = error_of(&as_model.replace("temperature = 0.0", "temperature = 1.5"));
    assert!(e.contains("run.temperature"), "{e}");
    assert!(e.contains("(model `sonnet`)"), "{e}");
    assert!(parse(&as_model.replace("temperature = 0.0", "temperature = 1.0")).is_ok());
    let as_judge = claude
        + "\n[[judges]]\nid = \"sonnet-judge\"\nprovider = \"claude\"\nmodel = \"claude-sonnet\"\nfamily = \"anthropic\"\n";
    let e = error_of(&as_judge.replace("seed = 7", "seed = 7\njudge_temperature = 1.5"));
    assert!(e.contains("run.judge_temperature"), "{e}");
    assert!(e.contains("(judge `sonnet-judge`)"), "{e}");
    // The models' temperature is not the judges': 1.5 for models is fine with a Claude judge.
    assert!(parse(&as_judge.replace("temperature = 0.0", "temperature = 1.5")).is_ok());
}

/// A base_url is recorded in the manifest: one carrying a secret is refused without echoing
/// it; one that is not an http(s) URL with a host is refused by name.
#[test]
fn a_base_url_with_credentials_or_a_query_is_refused_without_echoing_it() {
    let with = |url: &str| GOOD.replace("http://127.0.0.1:9/v1/", url);
    for url in [
        "http://user:PWSECRET@127.0.0.1:9/v1",
        "http://PWSECRET@127.0.0.1:9/v1",
        "https://host.example/v1?key=PWSECRET",
        "https://host.example/v1#PWSECRET",
    ] {
        let e = error_of(&with(url));
        assert!(e.contains("providers.oa.base_url"), "{url}: {e}");
        assert!(e.contains("api_key_env"), "{url}: {e}");
        assert!(!e.contains("PWSECRET"), "{url}: {e}");
    }
    for bad in [
        "htps://user:PWSECRET@host/v1",
        "http://u:PWSECRET@exa mple.com",
    ] {
        let e = error_of(&with(bad));
        assert!(
            e.contains("not an http(s) URL") && !e.contains("PWSECRET"),
            "{e}"
        );
    }
    for url in [
        "ftp://host/v1",
        "http://",
        "127.0.0.1:9/v1",
        "http://exa mple.com",
    ] {
        let e = error_of(&with(url));
        assert!(e.contains("is not an http(s) URL"), "{url}: {e}");
    }
    assert!(parse(&with("https://[::1]:8080/v1")).is_ok());
}

/// `[run] suite` names one folder under suites/: `..` would read the project as a suite.
#[test]
fn the_suite_is_a_folder_name() {
    for bad in ["..", ".", "a/b", "../x", "python-pitfalls/", ".hidden"] {
        let e = error_of(&GOOD.replace("suite = \"python-pitfalls\"", &format!("suite = {bad:?}")));
        assert!(
            e.contains("run.suite") && e.contains("not a folder name"),
            "{bad}: {e}"
        );
    }
    assert!(parse(&GOOD.replace("python-pitfalls", "pitfalls_v1.2")).is_ok());
}

/// A config that exists but cannot be read says why, not "create it".
#[test]
fn an_unreadable_config_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = load_config(dir.path())
        .expect_err("a directory")
        .to_string();
    assert!(e.contains("it is a directory"), "{e}");
    let latin1 = dir.path().join("judge.toml");
    std::fs::write(&latin1, b"[run]\nsuite = \"caf\xe9\"\n").expect("write");
    let e = load_config(&latin1).expect_err("not UTF-8").to_string();
    assert!(e.contains("not valid UTF-8: save it as UTF-8"), "{e}");
    let e = load_config(&dir.path().join("missing.toml"))
        .expect_err("missing")
        .to_string();
    assert!(e.contains("create it, or pass --config PATH"), "{e}");
}
