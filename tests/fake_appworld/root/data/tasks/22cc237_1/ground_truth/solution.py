# FAKE ground truth (tests/fake_appworld): shaped like an AppWorld solution.py, for the fake apps.
from appworld.apps.admin.models import MainUserMunch  # noqa: F401 - as the shipped solutions import it


def solution(main_user, apis, requester, public_data):
    answer = _solution(main_user, apis, requester, public_data)
    apis.supervisor.complete_task(answer=answer, status="success")
    return answer


def _solution(main_user, apis, requester, public_data):
    access_token = apis.venmo.access_token_from(main_user)
    email_of = {f.first_name: f.email for f in apis.venmo.show_friends(access_token=access_token)}
    share = public_data.total / (len(public_data.diners) + 1)
    for name in public_data.diners:
        if name not in public_data.paid_back:
            apis.venmo.create_payment_request(user_email=email_of[name], amount=share,
                                              description=public_data.description, access_token=access_token)
    return None
