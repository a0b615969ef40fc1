"""The secret shapes that passed the redactor on held-out text (issue 21), each redacted, with what stays visible."""

from __future__ import annotations

import pytest

from core.evidence.redaction import redact

# (kind, text, secret that must go, text that must stay)
SHAPES = [
    ("sendgrid key in a runbook",
     "Mail relay: set `SENDGRID_API_KEY=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`",
     "aB3dE5fG7hJ9kL1mN3pQ5r", "SENDGRID_API_KEY="),
    ("sendgrid key, short segments", "key SG.q8Vh1mKcZx7Tn4RrY2sP.dEw9fUj6LoBa3HiGv5NtQ8XyZ1c ok", "q8Vh1mKcZx7Tn4RrY2sP", "SG."),
    ("token right after =",
     "callback?sig=Xk9Lm2Np4Qr6St8Uv0Wx2Yz4Ab6Cd8Ef0Gh2Ij4Kl done", "Xk9Lm2Np4Qr6St8Uv0Wx2Yz4Ab6Cd8Ef0Gh", "sig="),
    ("token right after :", "x-signature:Xk9Lm2Np4Qr6St8Uv0Wx2Yz4Ab6Cd8Ef0Gh2Ij4Kl", "Xk9Lm2Np4Qr6St8Uv0Wx2Yz", "x-signature:"),
    ("dsn password of 1 digit", "DATABASE_URL=postgres://app:7@db.internal:5432/shop", "app:7@", "db.internal:5432/shop"),
    ("dsn password of 5 digits", "mysql://report:31337@replica.internal:3306/shop", ":31337@", "replica.internal:3306"),
    ("host-less dsn",
     "dsn postgresql://app:Wint3rPw@/orders?host=/var/run/postgresql", "Wint3rPw", "/orders?host=/var/run/postgresql"),
    ("dsn password with a quote", "url=mysql://app:pa\"ss7@db.internal/shop", "ss7", "db.internal/shop"),
    ("dsn password with angle brackets", "url=mysql://app:<pa>ss7@db.internal/shop", "ss7", "db.internal/shop"),
    ("kv password with a quote inside", "login password=ab\"cd9ef user=bob", "cd9ef", "user=bob"),
    ("kv password with angle brackets", "login password=a<b>c9d user=bob", "c9d", "user=bob"),
    ("yaml password with spaces", "auth:\n  password: correct horse battery 9\n  user: bob", "horse battery", "user: bob"),
    ("json password with a space", '{"password": "correct horse 9", "user": "bob"}', "horse", '"user": "bob"'),
    ("xoxc token", "cookie xoxc-1234567890-1234567890123-1234567890123-abcdef0123456789abcdef0123456789 sent",
     "1234567890123-abcdef", "cookie"),
    ("xoxd token", "d=xoxd-aBcD%2FeFgH%2BiJkL%3D%3DmNoPqRsTuVwXyZ0123456789 set", "aBcD%2FeFgH", "set"),
    ("hex token as url user name", "git clone https://4f2a9c81d7e6b5a4f3c2d1e0b9a8f7e6d5c4b3a2@github.com/shop/orders.git",
     "4f2a9c81d7e6b5a4f3c2d1e0b9a8f7e6d5c4b3a2", "github.com/shop/orders.git"),
    ("curl -u user:password",
     "ran curl -s -u deploy:S3cretDepl0y https://ci.internal/api", "S3cretDepl0y", "https://ci.internal/api"),
    ("curl --user=user:password", "curl --user=deploy:S3cretDepl0y https://ci.internal", "S3cretDepl0y", "https://ci.internal"),
    ("base64 value of a password key (yaml)",
     "data:\n  password: c2VjcmV0LXBhc3N3b3JkLTk=\n", "c2VjcmV0LXBhc3N3b3JkLTk", "data:"),
    ("base64 value of a password key (json)", '{"db_password_b64": "c2VjcmV0LXBhc3M="}', "c2VjcmV0LXBhc3M", "db_password"),
    ("base64 value of a password key (env)", "SMTP_PASSWORD=c2VjcmV0LXBhc3M= sent", "c2VjcmV0LXBhc3M", "sent"),
    ("pem header alone", "-----BEGIN RSA PRIVATE KEY-----", "BEGIN RSA PRIVATE KEY", ""),
    ("pem end line alone", "-----END RSA PRIVATE KEY-----", "END RSA PRIVATE KEY", ""),
    ("pem body line alone", "MIIEowIBAAKCAQEAq83lkrW5Yx0Zk9Pf3Gh1Jm2Np4Qr6St8Uv0Wx2Yz4Ab6Cd8Ef0Gh2Ij4Kl6Mn8Op0",
     "q83lkrW5Yx0Zk9Pf3Gh1Jm2Np4", ""),
    ("pem body line alone, no MII", "q83lkrW5Yx0Zk9Pf3Gh1Jm2Np4Qr6St8Uv0Wx2Yz4Ab6Cd8Ef0Gh2Ij4Kl6Mn8Op0/Ab+Cd",
     "q83lkrW5Yx0Zk9Pf3Gh1Jm2Np4", ""),
    ("body lines before an END line", "Qr6St8Uv0Wx2Yz4Ab6Cd8Ef0Gh2Ij4Kl\n-----END PRIVATE KEY-----", "Qr6St8Uv0Wx2Yz4", ""),
    ("json name/value pair", '{"name": "smtp_password", "value": "Wint3r!Sun"}', "Wint3r!Sun", "smtp_password"),
    ("json value/name pair", '{"value": "Wint3r!Sun", "key": "SMTP_PASSWORD"}', "Wint3r!Sun", "SMTP_PASSWORD"),
    ("kubernetes env entry",
     "env:\n- name: DB_PASSWORD\n  value: Wint3r!Sun\n- name: DB_USER\n  value: app", "Wint3r!Sun", "value: app"),
    ("markdown config table", "| name | value |\n|---|---|\n| smtp_host | mail.internal |\n| smtp_password | Wint3r!Sun |",
     "Wint3r!Sun", "mail.internal"),
    ("psql key/value output", " smtp_password | Wint3r!Sun\n smtp_host     | mail.internal", "Wint3r!Sun", "mail.internal"),
]


# Found by a held-out sweep of common operations shapes after the first round of rules.
SHAPES += [
    ("docker login -p", "docker login -u ci -p Dck3rP4ss! registry.example.com", "Dck3rP4ss", "registry.example.com"),
    ("helm --password", "helm repo add private https://charts.example.com --username ci --password H3lmP4ss2024",
     "H3lmP4ss2024", "--username ci"),
    ("vault --token=", "vault login --token=hvs.Ab3Cd5Ef7Gh9Ij1Kl3Mn5", "Ab3Cd5Ef7Gh9", "vault login"),
    ("ldapsearch -w", "ldapsearch -x -D cn=admin,dc=shop -w Ld4pAdm1n! -b dc=shop", "Ld4pAdm1n", "-b dc=shop"),
    ("token named in prose", "twilio auth token 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a3928", "twilio auth token"),
    ("quoted password after the word", 'passwd "Qu0t3dPw" set', "Qu0t3dPw", "set"),
    ("postgres md5 hash", "rolpassword md5a3556571e93b0d20722ba62be61e8c2d", "a3556571e93b0d20722b", "rolpassword"),
    ("htpasswd apr1 hash", "admin:$apr1$r31.....$HqJZimcKQFAMYayBlzkrA/", "HqJZimcKQFAMYay", "admin:"),
]
KEPT_AS_IS = ["docker login --password-stdin", "the access token expired at 23:00", "api key rotation scheduled"]


@pytest.mark.parametrize("text", KEPT_AS_IS)
def test_words_near_the_new_shapes_are_kept(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(("kind", "text", "secret", "kept"), SHAPES, ids=[s[0] for s in SHAPES])
def test_each_held_out_shape_is_redacted(kind: str, text: str, secret: str, kept: str) -> None:
    """The secret goes, the evidence around it stays, and a second pass changes nothing."""
    out = redact(text)
    assert secret not in out, out
    assert kept in out, out
    assert redact(out) == out
