# FAKE ground truth (tests/fake_appworld): shaped like an AppWorld solution.py, for the fake apps.
from appworld.apps.admin.models import MainUserMunch  # noqa: F401 - as the shipped solutions import it


def solution(main_user, apis, requester, public_data):
    answer = _solution(main_user, apis, requester, public_data)
    apis.supervisor.complete_task(answer=answer, status="success")
    return answer


def _solution(main_user, apis, requester, public_data):
    access_token = apis.spotify.access_token_from(main_user)
    album = apis.spotify.show_album(album_id=public_data.album_id, access_token=access_token)
    song = max(album.songs, key=lambda s: s.play_count)
    apis.spotify.add_song_to_queue(song_id=song.song_id, access_token=access_token)
    return None
