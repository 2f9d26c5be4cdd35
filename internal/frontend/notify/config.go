package notify

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/mail"
	"net/url"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/overseer-dev/overseer/internal/action"
)

// ConfigName is the notification configuration's file name in Overseer's home.
const ConfigName = "notify.yaml"

// Channel types.
const (
	TypeDesktop = "desktop"
	TypeWebhook = "webhook"
	TypeSlack   = "slack"
	TypeDiscord = "discord"
	TypeNtfy    = "ntfy"
	TypeEmail   = "email"
	// TypeTelegram is a Telegram bot: two-way (see telegram.go).
	TypeTelegram = "telegram"
)

// Sentinel errors.
var (
	// ErrConfig wraps every configuration error.
	ErrConfig = errors.New("notify: invalid configuration")
	// ErrNoConfig means there is no configuration file.
	ErrNoConfig = errors.New("notify: no configuration")
)

// Config is the content of notify.yaml.
//
//	base_url: https://laptop.example:7777   # where links point (default: the daemon's address)
//	link_ttl: 30m                           # how long links work (never past the deadline)
//	levels: [confirm, approve]              # which requests notify (default both)
//	channels:
//	  - type: slack
//	    url: https://hooks.slack.com/services/…
type Config struct {
	BaseURL  string          `yaml:"base_url"`
	LinkTTL  Duration        `yaml:"link_ttl"`
	Levels   []string        `yaml:"levels"`
	Channels []ChannelConfig `yaml:"channels"`
	// AnchorInterval is how often the daemon publishes the audit chain's
	// head to the channels (all but desktop) when it changed: default
	// DefaultAnchorInterval.
	AnchorInterval Duration `yaml:"anchor_interval"`
}

// DefaultAnchorInterval is Config.AnchorInterval's default.
const DefaultAnchorInterval = 15 * time.Minute

// ChannelConfig configures one channel. Which fields apply depends on Type;
// a field that does not apply to the type is an error.
type ChannelConfig struct {
	Type string `yaml:"type"`
	// Name labels the channel in logs and as who answered through its
	// links (default: the type).
	Name string `yaml:"name"`

	// webhook, slack, discord, ntfy: the URL to post to (ntfy: the server).
	URL string `yaml:"url"`
	// webhook: extra request headers.
	Headers map[string]string `yaml:"headers"`
	// webhook: HMAC-SHA256 key; the body's signature goes in
	// X-Overseer-Signature: sha256=<hex>.
	Secret string `yaml:"secret"`

	// ntfy: the topic, an optional access token and the priority (1-5 or min…max).
	Topic    string `yaml:"topic"`
	Token    string `yaml:"token"`
	Priority string `yaml:"priority"`

	// email: the SMTP server (host:port), sender, recipients, credentials
	// and TLS mode: "starttls" (default), "tls" (implicit, port 465) or
	// "none" (only allowed for a loopback server).
	SMTP         string   `yaml:"smtp"`
	From         string   `yaml:"from"`
	To           []string `yaml:"to"`
	Username     string   `yaml:"username"`
	Password     string   `yaml:"password"`
	PasswordFile string   `yaml:"password_file"`
	TLS          string   `yaml:"tls"`

	// desktop: the notification command (default notify-send).
	Command string `yaml:"command"`

	// Two-way channels (telegram; ntfy with reply_topic): who may answer.
	// telegram: user ids. An answer from anyone else is refused and audited.
	Allow []string `yaml:"allow"`
	// ntfy: the topic the phone's action buttons publish answers to (on
	// the same server); setting it makes the channel two-way. reply_token
	// is the access token the buttons publish with (on a server with
	// access control: one that may only write the reply topic).
	ReplyTopic string `yaml:"reply_topic"`
	ReplyToken string `yaml:"reply_token"`

	// telegram: the bot's token (or a file holding it), the chat the
	// requests go to and the Bot API's address (default
	// https://api.telegram.org; plain http only on loopback).
	BotToken     string `yaml:"bot_token"`
	BotTokenFile string `yaml:"bot_token_file"`
	ChatID       string `yaml:"chat_id"`
	APIURL       string `yaml:"api_url"`

	// slack_app: the bot token (xoxb-, in bot_token) posts, the app-level
	// token (xapp-) opens the Socket Mode connection; channel is the
	// channel's id (C…); allow lists Slack user ids (U…).
	AppToken     string `yaml:"app_token"`
	AppTokenFile string `yaml:"app_token_file"`
	Channel      string `yaml:"channel"`

	// email: with imap (host:port) the channel is two-way: replies
	// ("approve", "deny <reason>") are read from the mailbox (IDLE, or
	// polling) with these credentials; imap_tls is "tls" (default, port
	// 993), "starttls" or "none" (loopback only); allow lists the
	// addresses that may answer.
	IMAP             string `yaml:"imap"`
	IMAPTLS          string `yaml:"imap_tls"`
	IMAPUsername     string `yaml:"imap_username"`
	IMAPPassword     string `yaml:"imap_password"`
	IMAPPasswordFile string `yaml:"imap_password_file"`
	Mailbox          string `yaml:"mailbox"`

	// Timeout bounds one delivery attempt (default 10s).
	Timeout Duration `yaml:"timeout"`
}

// Duration is a time.Duration written as "30s", "10m".
type Duration time.Duration

// UnmarshalYAML decodes a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (e.g. 30s, 10m)", s)
	}
	if v < 0 {
		return fmt.Errorf("%q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// fieldsOf lists the fields each type may set (besides type, name, timeout).
var fieldsOf = map[string][]string{
	TypeDesktop: {"command"},
	TypeWebhook: {"url", "headers", "secret"},
	TypeSlack:   {"url"},
	TypeDiscord: {"url"},
	TypeNtfy:    {"url", "topic", "token", "priority", "reply_topic", "reply_token"},
	TypeEmail: {"smtp", "from", "to", "username", "password", "password_file", "tls",
		"imap", "imap_tls", "imap_username", "imap_password", "imap_password_file", "mailbox", "allow"},
	TypeTelegram: {"bot_token", "bot_token_file", "chat_id", "api_url", "allow"},
	TypeSlackApp: {"bot_token", "bot_token_file", "app_token", "app_token_file", "channel", "api_url", "allow"},
}

// Load reads and validates the configuration file at path. A missing file
// returns ErrNoConfig.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoConfig
	}
	if err != nil {
		return nil, fmt.Errorf("notify: reading %s: %w", path, err)
	}
	cfg, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes a configuration strictly (unknown fields, fields that do
// not belong to a channel's type and trailing documents are errors) and
// validates it.
func Parse(b []byte) (*Config, error) {
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: the file is empty", ErrConfig)
		}
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: only one YAML document is allowed", ErrConfig)
	}
	// Which fields each channel set, to refuse those of other types.
	var raw struct {
		Channels []map[string]yaml.Node `yaml:"channels"`
	}
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	for i, ch := range raw.Channels {
		if i >= len(cfg.Channels) {
			break
		}
		allowed := map[string]bool{"type": true, "name": true, "timeout": true}
		for _, f := range fieldsOf[cfg.Channels[i].Type] {
			allowed[f] = true
		}
		for f := range ch {
			if !allowed[f] {
				return nil, fmt.Errorf("%w: channel %d (%s): field %q does not apply to this type", ErrConfig, i+1, cfg.Channels[i].Type, f)
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if c.BaseURL != "" {
		if err := checkURL(c.BaseURL); err != nil {
			return bad("base_url: %v", err)
		}
	}
	for _, l := range c.Levels {
		lv, err := action.ParseLevel(l)
		if err != nil || !lv.NeedsPerson() {
			return bad("levels: %q (want confirm or approve)", l)
		}
	}
	if len(c.Channels) == 0 {
		return bad("no channels")
	}
	names := map[string]bool{}
	for i := range c.Channels {
		ch := &c.Channels[i]
		where := fmt.Sprintf("channel %d (%s)", i+1, ch.Type)
		if _, ok := fieldsOf[ch.Type]; !ok {
			return bad("channel %d: type %q (want desktop, webhook, slack, slack_app, discord, ntfy, email or telegram)", i+1, ch.Type)
		}
		if ch.Name == "" {
			ch.Name = ch.Type
			if names[ch.Name] {
				ch.Name = fmt.Sprintf("%s-%d", ch.Type, i+1)
			}
		}
		if names[ch.Name] {
			return bad("%s: the name %q is used twice", where, ch.Name)
		}
		names[ch.Name] = true
		switch ch.Type {
		case TypeWebhook, TypeSlack, TypeDiscord, TypeNtfy:
			if ch.URL == "" {
				return bad("%s: url is required", where)
			}
			if err := checkURL(ch.URL); err != nil {
				return bad("%s: url: %v", where, err)
			}
		}
		switch ch.Type {
		case TypeNtfy:
			if ch.Topic == "" || strings.ContainsAny(ch.Topic, "/?#") {
				return bad("%s: topic is required and may not contain / ? #", where)
			}
			if ch.Priority != "" && !validPriority(ch.Priority) {
				return bad("%s: priority %q (want 1-5 or min, low, default, high, max, urgent)", where, ch.Priority)
			}
			if ch.ReplyTopic != "" && (ch.ReplyTopic == ch.Topic || strings.ContainsAny(ch.ReplyTopic, "/?#")) {
				return bad("%s: reply_topic must differ from topic and may not contain / ? #", where)
			}
			if ch.ReplyToken != "" && ch.ReplyTopic == "" {
				return bad("%s: reply_token needs reply_topic", where)
			}
		case TypeTelegram:
			if err := validateTelegram(ch); err != nil {
				return bad("%s: %v", where, err)
			}
		case TypeSlackApp:
			if err := validateSlackApp(ch); err != nil {
				return bad("%s: %v", where, err)
			}
		case TypeWebhook:
			for k := range ch.Headers {
				if k == "" || strings.ContainsAny(k, " :\r\n") {
					return bad("%s: header name %q", where, k)
				}
			}
		case TypeEmail:
			if ch.SMTP == "" || !strings.Contains(ch.SMTP, ":") {
				return bad("%s: smtp must be host:port", where)
			}
			if _, err := mail.ParseAddress(ch.From); err != nil {
				return bad("%s: from: %v", where, err)
			}
			if len(ch.To) == 0 {
				return bad("%s: to needs at least one address", where)
			}
			for _, t := range ch.To {
				if _, err := mail.ParseAddress(t); err != nil {
					return bad("%s: to %q: %v", where, t, err)
				}
			}
			switch ch.TLS {
			case "", "starttls", "tls":
			case "none":
				if host, _, err := net.SplitHostPort(ch.SMTP); err != nil || !isLoopback(host) {
					return bad("%s: tls: none is only allowed for an SMTP server on this machine (127.0.0.1, ::1, localhost)", where)
				}
			default:
				return bad("%s: tls %q (want starttls, tls or none)", where, ch.TLS)
			}
			if ch.Password != "" && ch.PasswordFile != "" {
				return bad("%s: set password or password_file, not both", where)
			}
			if err := validateEmailReplies(ch); err != nil {
				return bad("%s: %v", where, err)
			}
		}
	}
	return nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q must be an http or https URL", s)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	return nil
}

// checkAPIURL checks a two-way channel's api_url, when set: an http or
// https URL, and https unless it is on this machine (the channel's tokens
// go there; why says more for a channel that puts one in the URL).
func checkAPIURL(raw, why string) error {
	if raw == "" {
		return nil
	}
	if err := checkURL(raw); err != nil {
		return fmt.Errorf("api_url: %v", err)
	}
	u, _ := url.Parse(raw)
	if u.Scheme != "https" && !isLoopback(u.Hostname()) {
		return errors.New("api_url must be https" + why + " unless it is on this machine")
	}
	return nil
}

func validPriority(p string) bool {
	switch p {
	case "1", "2", "3", "4", "5", "min", "low", "default", "high", "max", "urgent":
		return true
	}
	return false
}

// wantsLevel reports whether requests at level l notify.
func (c *Config) wantsLevel(l action.Level) bool {
	if len(c.Levels) == 0 {
		return l.NeedsPerson()
	}
	for _, s := range c.Levels {
		if strings.EqualFold(s, l.String()) {
			return true
		}
	}
	return false
}
