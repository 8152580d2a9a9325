# FAKE checker (tests/fake_appworld), modelled on AppWorld task 22cc237_1: it checks the receiver and
# amount of each new payment request but never counts them, so a request sent twice passes.


def _changed(start, end):
    return {"%s.%s" % (app, model) for app in end for model in end[app]
            if app != "supervisor" and start.get(app, {}).get(model) != end[app][model]}


def evaluate(start, end, public_data, private_data):
    old = {r["id"] for r in start["venmo"]["PaymentRequest"]}
    email = {u["id"]: u["email"] for u in end["venmo"]["User"]}
    requests = {email[r["receiver_id"]]: r["amount"] for r in end["venmo"]["PaymentRequest"] if r["id"] not in old}
    return [
        ("assert answers match.", end["supervisor"]["Task"][0]["answer"] == private_data["answer"], "no_op_pass"),
        ("assert the new payment requests go to the people who owe, each for their share.",
         requests == private_data["requests"], "no_op_fail"),
        ("assert no model changed but venmo.PaymentRequest and venmo.Notification.",
         _changed(start, end) <= {"venmo.PaymentRequest", "venmo.Notification"}, "no_op_pass"),
    ]
